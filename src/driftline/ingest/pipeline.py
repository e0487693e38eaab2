"""Source-agnostic ingestion: raw records → decode → engine → one store transaction.

Used by `replay` (files, stdin) and by the Kafka consumer; each call to `process_batch` is one
transaction holding bucket deltas, join state, dead letters, counters and the positions reached.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import msgspec
from sqlalchemy.exc import DataError

from ..config import Config
from ..core.engine import Engine, EngineResult, EngineSettings, JoinView
from ..core.events import RAW_LIMIT, Decoded, DeadLetter, decode
from ..storage.store import Store
from .keys import key_detail, key_problem

MAX_FUTURE_S = 86400.0
"""Events stamped more than this ahead of the injected clock are dead-lettered (ts_in_future)."""


class RawRecord(msgspec.Struct, frozen=True, gc=False):
    """One undecoded event with its position: Kafka topic/partition/offset or file/line (a Struct: one is built
    per event)."""

    source: str
    partition: int
    offset: int
    payload: bytes
    kind: str | None = None
    key: bytes | None = None
    """Kafka record key (b"" when null), checked against the prediction_id; None: the source has no keys."""


@dataclass(slots=True)
class BatchResult:
    """What one batch did, for progress displays and operational metrics."""

    records: int = 0
    accepted: int = 0
    dead: int = 0
    duplicates: int = 0
    counters: Counter[tuple[str, str]] = field(default_factory=Counter)
    key_problems: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(source, key_missing|key_mismatch) → records accepted with a wrong key (policy accept)."""
    max_ts: dict[str, float] = field(default_factory=dict)

    def add(self, other: BatchResult) -> None:
        self.records += other.records
        self.accepted += other.accepted
        self.dead += other.dead
        self.duplicates += other.duplicates
        self.counters.update(other.counters)
        self.key_problems.update(other.key_problems)
        for k, v in other.max_ts.items():
            self.max_ts[k] = max(v, self.max_ts.get(k, v))


def settings_from(config: Config) -> EngineSettings:
    """Engine settings derived from the config."""
    return EngineSettings(threshold=config.threshold, bucket_s=config.bucket_s, max_features=config.max_features,
                          declared_features=tuple(config.features), slice_features=tuple(config.slices))


class Pipeline:
    """Decodes, joins and stores batches; the clock is injected (only used for the future-skew guard)."""

    def __init__(self, config: Config, store: Store, clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self.store = store
        self.clock = clock
        self.settings = settings_from(config)
        self.key_policy = config.kafka.on_key_mismatch

    def process_batch(self, records: Sequence[RawRecord], shard_of: Callable[[RawRecord], int] | None = None,
                      expected_positions: dict[tuple[str, int], int] | None = None,
                      meta: dict[str, str] | None = None) -> BatchResult:
        """Process records in one transaction; raises StoreUnavailable with nothing written.

        `expected_positions` ((source, partition) → offset the batch was read from) fences the batch: when a stored
        position moved meanwhile (another consumer owns the partition now) StalePositions is raised, nothing written.
        `meta` key/values are written in the same transaction (replay stores its file's fingerprint there).
        """
        ok: list[tuple[Decoded, int]] = []
        dead: list[DeadLetter] = []
        horizon = self.clock() + MAX_FUTURE_S
        positions: dict[tuple[str, int], int] = {}
        key_problems: Counter[tuple[str, str]] = Counter()
        for r in records:
            d = decode(r.payload, r.source, r.partition, r.offset, r.kind)
            if type(d) is DeadLetter:
                dead.append(d)
            elif d.ts > horizon:  # type: ignore[union-attr]
                detail = f"ts {d.ts:.0f} is more than 1 day ahead of the clock"  # type: ignore[union-attr]
                dead.append(DeadLetter("ts_in_future", detail, r.source, r.partition, r.offset,
                                       bytes(r.payload[:RAW_LIMIT])))
            elif r.key is not None and (kp := key_problem(r.key, d.event.prediction_id)):  # type: ignore[union-attr]
                if self.key_policy == "dead_letter":
                    dead.append(DeadLetter(kp, key_detail(kp, r.key, d.event.prediction_id),  # type: ignore
                                           r.source, r.partition, r.offset, bytes(r.payload[:RAW_LIMIT])))
                else:
                    key_problems[(r.source, kp)] += 1
                    ok.append((d, r.partition if shard_of is None else shard_of(r)))  # type: ignore[arg-type]
            else:
                ok.append((d, r.partition if shard_of is None else shard_of(r)))  # type: ignore[arg-type]
            key = (r.source, r.partition)
            if r.offset >= positions.get(key, 0):
                positions[key] = r.offset + 1
        with self.store.begin() as conn:
            view = self.store.load_join(conn, (d.event.prediction_id for d, _ in ok))
            engine = Engine(self.settings, view)
            for d, s in ok:
                engine.apply(d, s)
            result = engine.finish()
            self.store.commit_batch(conn, result, dead, positions, meta=meta, expected_positions=expected_positions)
        out = BatchResult(records=len(records), accepted=len(ok), dead=len(dead), counters=result.counters,
                          max_ts=dict(result.max_ts), key_problems=key_problems)
        out.duplicates = sum(v for (name, _), v in result.counters.items() if name == "duplicates")
        return out

    def process_isolating(self, records: Sequence[RawRecord], meta: dict[str, str] | None = None) -> BatchResult:
        """`process_batch`, but when the database refuses the batch (DataError: a value the decoder let through and
        a column does not take), its records are stored one by one and each refused one becomes a
        `store_rejected` dead letter, so one bad record can neither stop nor drop the rest."""
        try:
            return self.process_batch(records, meta=meta)
        except DataError:
            total = BatchResult()
            for raw in records:
                result, _ = self.store_or_reject(raw, meta=meta)
                total.add(result)
            return total

    def store_or_reject(self, raw: RawRecord, expected_positions: dict[tuple[str, int], int] | None = None,
                        meta: dict[str, str] | None = None) -> tuple[BatchResult, DeadLetter | None]:
        """Store one record; if the database refuses it, store a `store_rejected` dead letter for it instead (its
        position advances with it) and return that letter too."""
        try:
            return self.process_batch([raw], None, expected_positions, meta), None
        except DataError as err:
            reason = str(err).splitlines()[0][:500]
        letter = DeadLetter("store_rejected", reason, raw.source, raw.partition, raw.offset,
                            bytes(raw.payload[:RAW_LIMIT]))
        with self.store.begin() as conn:
            self.store.commit_batch(conn, EngineResult(), [letter], {(raw.source, raw.partition): raw.offset + 1},
                                    meta=meta, expected_positions=expected_positions)
        return BatchResult(records=1, dead=1), letter

    def watermark(self) -> float | None:
        """Event-time watermark: the newest event time stored (drives maturity and expiry)."""
        return self.store.newest_event()

    def maintain(self, shards: Sequence[int] | None = None) -> Counter[tuple[str, str]]:
        """Implicit negatives past maturity and expiry past the label horizon, at the event-time watermark."""
        wm = self.watermark()
        total: Counter[tuple[str, str]] = Counter()
        if wm is None:
            return total
        labels = self.config.labels
        while True:
            with self.store.begin() as conn:
                engine = Engine(self.settings, JoinView())
                mature = []
                after = labels.implicit_after_s
                if after is not None:
                    mature = self.store.unlabelled_before(conn, wm - after, shards, limit=20_000)
                    engine.mature(mature)
                old_preds, old_outs = self.store.joins_before(conn, wm - labels.horizon_s, shards, limit=20_000)
                matured = {r.key: r for r in mature}
                old_preds = [matured.get(r.key, r) for r in old_preds]
                engine.expire(old_preds, old_outs)
                result = engine.finish()
                self.store.commit_batch(conn, result, [], {})
            total.update(result.counters)
            if len(mature) < 20_000 and len(old_preds) < 20_000 and len(old_outs) < 20_000:
                return total
