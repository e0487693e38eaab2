"""Source-agnostic ingestion: raw records → decode → engine → one store transaction.

Used by `replay` (files, stdin) and by the Kafka consumer; each call to `process_batch` is one
transaction holding bucket deltas, join state, dead letters, counters and the positions reached.
"""

from __future__ import annotations

import logging
import math
import time
from collections import Counter
from collections.abc import Callable, Sequence
from itertools import compress, filterfalse
from operator import attrgetter

import msgspec
from sqlalchemy import Connection
from sqlalchemy.exc import DataError

from ..config import Config
from ..core.batch import event_columns
from ..core.engine import Engine, EngineResult, EngineSettings, JoinView
from ..core.decode_many import decode_many
from ..core.events import RAW_LIMIT, Decoded, DeadLetter, iso
from ..core.limits import MAX_FUTURE_S, Limits
from ..storage import ceilings
from ..storage.store import Store
from .batch_result import BatchResult, behind_count
from .isolation import TICK, Tick, apply_isolating
from .keys import key_detail, key_problem, keys_match
from .labels import LabelPolicy
from .sampling import record_samples
from .stored_now import KeyLog

log = logging.getLogger(__name__)

EXPIRED_STORED_NOW = ("expired_stored_now", "")
"""Key of `maintain`'s count of expired predictions that the same pipeline stored (never a stored counter)."""
FILE_PREFIX = "file:"
"""Sources of replayed files (their positions are fenced); stdin and Kafka are not file sources."""
_OFFSET = attrgetter("offset")


class RawRecord(msgspec.Struct, frozen=True, gc=False):
    """One undecoded event with its position: Kafka topic/partition/offset or file/line (a Struct: one is built
    per event)."""

    source: str
    partition: int
    offset: int
    payload: bytes
    kind: str | None = None
    key: bytes | None = None
    """Kafka record key (keys.NULL_KEY when null), checked against the prediction_id; None: the source has no
    keys."""


Defer = Callable[[Sequence[RawRecord], list[Decoded | DeadLetter]], list[bool] | None]
"""Which records of a decoded batch to store now (None: all); see `Pipeline.process_batch`."""

Split = tuple[list[tuple[Decoded, int]], list[RawRecord], Sequence[int], list[DeadLetter], list[int],
              dict[tuple[str, int], int], Counter[tuple[str, str]]]
"""(accepted (event, shard) pairs, their records, their indices, dead letters, their indices, positions reached,
key problems) of a batch."""


def _split_plain(records: Sequence[RawRecord], decoded: list[Decoded | DeadLetter], horizon: float,
                 shard_of: Callable[[RawRecord], int] | None) -> Split | None:
    """`Pipeline._split` for the common batch, a column at a time: no event is past the horizon (only decoding refused
    some) and either no record has a key (files) or every accepted event's key is its prediction_id (Kafka, both
    topics keyed as they must be); None for any other batch (so ts_in_future letters, `future_detail`, come from
    `Pipeline._split` only)."""
    n = len(records)
    keyless = [r.key for r in records].count(None)
    if keyless != n and keyless:
        return None
    if DeadLetter in set(map(type, decoded)):
        live = [type(d) is not DeadLetter for d in decoded]
        ok_at: Sequence[int] = list(compress(range(n), live))
        dead_at = [i for i, f in enumerate(live) if not f]
        ok_dec: list[Decoded] = [decoded[i] for i in ok_at]  # type: ignore[misc]
        ok_raw = [records[i] for i in ok_at]
    else:
        ok_at, dead_at, ok_dec, ok_raw = range(n), [], decoded, list(records)  # type: ignore[assignment]
    if ok_dec and max([d.ts for d in ok_dec]) > horizon:
        return None
    if not keyless and not keys_match([r.key for r in ok_raw], [d.event.prediction_id for d in ok_dec]):
        return None
    shards = [r.partition for r in ok_raw] if shard_of is None else list(map(shard_of, ok_raw))
    return (list(zip(ok_dec, shards)), ok_raw, ok_at, [decoded[i] for i in dead_at], dead_at,  # type: ignore[misc]
            _positions(records), Counter())


def future_detail(ts: float) -> str:
    """The detail of a ts_in_future dead letter: the time in ISO 8601 UTC as other details show it, the epoch
    seconds after it (tryout: an event sent with an ISO time was shown back as `ts 1796585213`)."""
    return f"ts {iso(ts)} ({ts:.0f} s since the epoch) is more than 1 day ahead of the clock"


def _positions(records: Sequence[RawRecord]) -> dict[tuple[str, int], int]:
    """(source, partition) → the offset after the highest one of the batch (offsets below 0 move nothing)."""
    sources = [r.source for r in records]
    parts = [r.partition for r in records]
    offsets = [r.offset for r in records]
    if records and sources.count(sources[0]) == len(sources) and parts.count(parts[0]) == len(parts):
        top = max(offsets)
        return {(sources[0], parts[0]): top + 1} if top >= 0 else {}
    positions: dict[tuple[str, int], int] = {}
    for key, offset in zip(zip(sources, parts), offsets):
        if offset >= positions.get(key, 0):
            positions[key] = offset + 1
    return positions


def limits_from(config: Config) -> Limits:
    """Per-event bounds from the config's `limits` section."""
    c = config.limits
    return Limits(max_event_bytes=c.max_event_bytes, max_depth=c.max_depth, max_features=c.max_features,
                  max_feature_value_len=c.max_feature_value_len)


def settings_from(config: Config) -> EngineSettings:
    """Engine settings derived from the config."""
    return EngineSettings(threshold=config.threshold, bucket_s=config.bucket_s, max_features=config.max_features,
                          declared_features=tuple(config.features), slice_features=tuple(config.slices))


class Pipeline:
    """Decodes, joins and stores batches; the clock is injected (only used for the future-skew guard)."""

    def __init__(self, config: Config, store: Store, clock: Callable[[], float] = time.time,
                 keep_model: bool = False) -> None:
        """`keep_model`: the config file names its `model:`, which keeps a slot under limits.max_models."""
        self.config = config
        self.store = store
        self.clock = clock
        self.settings = settings_from(config)
        self.limits = limits_from(config)
        self.labels = LabelPolicy(config.limits, clock, {config.model: config.ab.arms},  # arms keep their slots
                                  (config.model,) if keep_model else ())
        self.key_policy = config.kafka.on_key_mismatch
        self.stored_now: KeyLog | None = None
        """When set (replay), the keys of the predictions this pipeline stores as new are logged there."""
        self.read_newest: float | None = None
        """The newest event time this pipeline stored (BatchResult.behind counts events far behind it)."""

    def process_batch(self, records: Sequence[RawRecord], shard_of: Callable[[RawRecord], int] | None = None,
                      expected_positions: dict[tuple[str, int], int] | None = None,
                      meta: dict[str, str] | None = None, rewind: bool = False, tick: Tick | None = None,
                      position_meta: dict[str, str] | None = None, defer: Defer | None = None) -> BatchResult:
        """Process records in one write transaction (the database write lock is held from its first read, so
        concurrent writers never lose an update); raises StoreUnavailable with nothing written.

        `expected_positions` ((source, partition) → offset the batch was read from) fences the batch: when a stored
        position moved meanwhile (another consumer owns the partition now) StalePositions is raised, nothing written.
        Without it, file sources are fenced by `_fence_files` (`rewind`: this batch deliberately starts a file over).
        `meta` key/values are written in the same transaction (replay stores its file's fingerprint there), and
        `position_meta` ones too when the file positions stored are this batch's own (not kept higher by another
        replay of the same path): replay's checksum of the lines up to its position, true only at that position.
        `tick(stage, done, of)` is told how far the batch got (every TICK records, for a progress display).
        `defer(records, decoded)` may keep only some records (a mask; None: all): the live consumer gives back the
        records too far ahead in event time (kafka/alignment.py); the positions are those of the records kept.
        """
        horizon = self.clock() + MAX_FUTURE_S
        decoded: list[Decoded | DeadLetter] = []
        for start in range(0, len(records), TICK):  # runs of TICK records: one msgspec call each, a tick between
            if tick is not None:
                tick("decoding", start, len(records))
            decoded.extend(decode_many(records[start:start + TICK], self.limits))
        if defer is not None and (kept := defer(records, decoded)) is not None:
            records, decoded = list(compress(records, kept)), list(compress(decoded, kept))
        split = _split_plain(records, decoded, horizon, shard_of)
        if split is None:
            split = self._split(records, decoded, horizon, shard_of)
        ok, ok_raw, ok_at, dead, dead_at, positions, key_problems = split
        skipped = 0
        own = dict(positions)
        with self.store.write() as conn:
            if expected_positions is None and not rewind:
                fresh, positions = self._fence_files(conn, records, positions)
                if position_meta and positions == own:
                    meta = {**(meta or {}), **position_meta}
                if fresh is not None:
                    skipped = fresh.count(False)
                    ok = [x for x, i in zip(ok, ok_at) if fresh[i]]
                    ok_raw = [x for x, i in zip(ok_raw, ok_at) if fresh[i]]
                    dead = [x for x, i in zip(dead, dead_at) if fresh[i]]
            elif position_meta:
                meta = {**(meta or {}), **position_meta}
            ts = [d.ts for d, _ in ok]  # listed once: the horizon test and the behind count read them
            wm, admitted = self.store.batch_start_in(conn)
            ok, ok_raw, ts = self._within_horizon(wm, ok, ok_raw, dead, ts)
            behind, newest = behind_count(ts, self.read_newest, self.config.labels.horizon_s)
            for d in dead:
                if d.reason == "internal_error":
                    log.error("dead letter internal_error: %s[%d]@%d: %s", d.source, d.partition, d.offset, d.detail)
            columns = event_columns(ok)  # listed once for the gate, the join lookup and the engine
            gated, ok_raw, gate = self.labels.gate(self.store, conn, ok, ok_raw, dead, columns[0],  # refused: dead
                                                   columns[2], admitted=admitted)
            if gated is not ok:  # labels folded or refused: other events
                ok, columns = gated, event_columns(gated)
            ids = columns[1]  # load_join takes any iterable of ids, repeated ones too
            result, failed = apply_isolating(
                self.settings, ok, lambda: self.store.load_join(conn, ids),
                lambda i: (ok_raw[i].source, ok_raw[i].partition, ok_raw[i].offset, ok_raw[i].payload), tick,
                columns)
            record_samples(conn, self.settings, ok, ok_raw, failed, self.config.drift.sample_k,
                           result.feature_columns)
            dead += failed
            self.labels.record(self.store, conn, gate, result.counters)
            if tick is not None:
                tick("storing", len(records), len(records))
            self.store.commit_batch(conn, result, dead, positions, meta=meta, expected_positions=expected_positions)
        self.read_newest = newest  # committed: the next batch's events are judged behind these
        if self.stored_now is not None:  # committed: its new join rows are this run's
            known = result.stored.preds if result.stored is not None else frozenset()
            # in upsert order, without a generator frame per key (SQLite's lookups record no stored keys: none to skip)
            self.stored_now.add(filterfalse(known.__contains__, result.upserts) if known else result.upserts)
        out = BatchResult(records=len(records), accepted=len(ok) - len(failed), dead=len(dead),
                          counters=result.counters, max_ts=dict(result.max_ts), letters=dead,
                          already_stored=skipped, key_problems=key_problems, conflict_example=result.conflict_example)
        out.duplicates = sum(v for (name, _), v in result.counters.items() if name == "duplicates")
        out.folded = sum(gate.folded.values())
        out.past_horizon = sum(d.reason == "past_horizon" for d in dead)
        out.behind = behind
        return out

    def _within_horizon(self, wm: float | None, ok: list[tuple[Decoded, int]], ok_raw: list[RawRecord],
                        dead: list[DeadLetter], ts: list[float]
                        ) -> tuple[list[tuple[Decoded, int]], list[RawRecord], list[float]]:
        """The events not older than the label horizon behind the watermark stored before this batch (read in its
        write transaction, so concurrent writers end as a sequential run); the others are dead-lettered
        past_horizon (second tryout: their join state expired on arrival, so a second copy of them was not seen as
        a duplicate and every count doubled). `wm`: that watermark (Store.batch_start_in); `ts`: the events' times,
        returned with the events kept."""
        if wm is None or not ok:
            return ok, ok_raw, ts
        cutoff = wm - self.config.labels.horizon_s
        if min(ts) >= cutoff:
            return ok, ok_raw, ts
        keep = [t >= cutoff for t in ts]
        for (d, _), r, k in zip(ok, ok_raw, keep):
            if not k:
                dead.append(DeadLetter("past_horizon", f"ts {iso(d.ts)} is more than labels.horizon "
                                       f"({self.config.labels.horizon}) before the newest event stored ({iso(wm)}): "
                                       "it could be neither joined nor told from a copy", r.source, r.partition,
                                       r.offset, bytes(r.payload[:RAW_LIMIT])))
        return list(compress(ok, keep)), list(compress(ok_raw, keep)), list(compress(ts, keep))

    def _split(self, records: Sequence[RawRecord], decoded: list[Decoded | DeadLetter], horizon: float,
               shard_of: Callable[[RawRecord], int] | None) -> Split:
        """The batch's accepted events and dead letters, record by record (future timestamps, key checks), and the
        positions reached; `_split_plain` gives the same for batches without keys or future timestamps."""
        ok: list[tuple[Decoded, int]] = []
        ok_raw: list[RawRecord] = []  # the record of each ok event
        dead: list[DeadLetter] = []
        ok_at: list[int] = []
        dead_at: list[int] = []
        positions: dict[tuple[str, int], int] = {}
        key_problems: Counter[tuple[str, str]] = Counter()
        for i, (r, d) in enumerate(zip(records, decoded)):
            if type(d) is DeadLetter:
                dead.append(d)
                dead_at.append(i)
            elif d.ts > horizon:  # type: ignore[union-attr]
                detail = future_detail(d.ts)  # type: ignore[union-attr]
                dead.append(DeadLetter("ts_in_future", detail, r.source, r.partition, r.offset,
                                       bytes(r.payload[:RAW_LIMIT])))
                dead_at.append(i)
            elif (r.key is not None and self.key_policy == "dead_letter"
                  and (kp := key_problem(r.key, d.event.prediction_id))):  # type: ignore[union-attr]
                dead.append(DeadLetter(kp, key_detail(kp, r.key, d.event.prediction_id),  # type: ignore
                                       r.source, r.partition, r.offset, bytes(r.payload[:RAW_LIMIT])))
                dead_at.append(i)
            else:
                if r.key is not None and (kp := key_problem(r.key, d.event.prediction_id)):  # type: ignore
                    key_problems[(r.source, kp)] += 1  # policy accept: stored, counted, warned
                ok.append((d, r.partition if shard_of is None else shard_of(r)))  # type: ignore[arg-type]
                ok_raw.append(r)
                ok_at.append(i)
            key = (r.source, r.partition)
            if r.offset >= positions.get(key, 0):
                positions[key] = r.offset + 1
        return ok, ok_raw, ok_at, dead, dead_at, positions, key_problems

    def _fence_files(self, conn: Connection, records: Sequence[RawRecord], positions: dict[tuple[str, int], int]
                     ) -> tuple[list[bool] | None, dict[tuple[str, int], int]]:
        """Fence file positions like Kafka partitions, inside the locked transaction: lines below the stored
        position of their file were stored by another replay of the same path (skipped, not applied twice), and the
        stored position never moves back. stdin has no stable positions: never fenced. Returns which records are
        fresh (None: all of them) and the positions to store."""
        keys = [k for k in positions if k[0].startswith(FILE_PREFIX)]
        stored = self.store.stored_positions(conn, keys)
        moved = {k: max(v, stored.get(k, 0)) for k, v in positions.items()}
        if records and min(map(_OFFSET, records)) >= max(stored.values(), default=0):
            return None, moved  # every record at or past every stored position (a replay going on): all fresh
        fresh = [r.offset >= stored.get((r.source, r.partition), 0) for r in records]
        return (None if all(fresh) else fresh), moved

    def process_isolating(self, records: Sequence[RawRecord], meta: dict[str, str] | None = None,
                          rewind: bool = False, tick: Tick | None = None,
                          position_meta: dict[str, str] | None = None) -> BatchResult:
        """`process_batch`, but when the database refuses the batch (DataError: a value the decoder let through and
        a column does not take), its records are stored one by one and each refused one becomes a
        `store_rejected` dead letter, so one bad record can neither stop nor drop the rest (`position_meta`, true
        at the batch's end, goes with its last record)."""
        try:
            return self.process_batch(records, meta=meta, rewind=rewind, tick=tick, position_meta=position_meta)
        except DataError:
            total = BatchResult()
            for i, raw in enumerate(records):
                last = position_meta if i == len(records) - 1 else None
                result, _ = self.store_or_reject(raw, meta=meta, rewind=rewind and i == 0, position_meta=last)
                total.add(result)
            return total

    def store_or_reject(self, raw: RawRecord, expected_positions: dict[tuple[str, int], int] | None = None,
                        meta: dict[str, str] | None = None, rewind: bool = False,
                        position_meta: dict[str, str] | None = None) -> tuple[BatchResult, DeadLetter | None]:
        """Store one record; if the database refuses it, store a `store_rejected` dead letter for it instead (its
        position advances with it) and return that letter too."""
        try:
            return self.process_batch([raw], None, expected_positions, meta, rewind, position_meta=position_meta), None
        except DataError as err:
            reason = str(err).splitlines()[0][:500]
        letter = DeadLetter("store_rejected", reason, raw.source, raw.partition, raw.offset,
                            bytes(raw.payload[:RAW_LIMIT]))
        with self.store.write() as conn:
            positions = {(raw.source, raw.partition): raw.offset + 1}
            if expected_positions is None and not rewind:
                fresh, positions = self._fence_files(conn, [raw], positions)
                if fresh is not None:
                    self.store.commit_batch(conn, EngineResult(), [], positions, meta=meta)
                    return BatchResult(records=1, already_stored=1), None
            if position_meta:  # not fenced: the position stored is this record's
                meta = {**(meta or {}), **position_meta}
            self.store.commit_batch(conn, EngineResult(), [letter], positions, meta=meta,
                                    expected_positions=expected_positions)
        return BatchResult(records=1, dead=1), letter

    def watermark(self) -> float | None:
        """Event-time watermark: the newest event time stored (drives maturity and expiry)."""
        return self.store.newest_event()

    def maintain(self, shards: Sequence[int] | None = None, ceiling: float | None = None,
                 member: str | None = None) -> Counter[tuple[str, str]]:
        """Implicit negatives past maturity and expiry past the label horizon, at the event-time watermark. With
        `stored_now` set, the counts also hold EXPIRED_STORED_NOW: the expired predictions this pipeline stored.
        `ceiling`: the watermark is at most this (the live consumer's slowest partition with data left, see
        kafka/alignment.py: an outcome still unread there is not older than it, so nothing is expired or matured
        that a sequential replay would still join; -inf: a partition not read yet, no maintenance now), nor more
        than the lowest fresh ceiling the live consumers recorded (storage/ceilings.py; `member`: the caller's own
        row, left out: its `ceiling` is newer)."""
        wm = self.watermark()
        total: Counter[tuple[str, str]] = Counter()
        others = ceilings.shared(self.store, self.clock(), exclude=member) if wm is not None else None
        for cap in (ceiling, others):
            if wm is not None and cap is not None:
                wm = min(wm, cap)
        if wm is None or wm == -math.inf:
            return total
        labels = self.config.labels
        while True:
            with self.store.write() as conn:
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
            if self.stored_now is not None:  # (matured records hold their label by now: they do not expire unlabelled)
                total[EXPIRED_STORED_NOW] += sum(r.label is None and self.stored_now.contains(r.key) for r in old_preds)
            if len(mature) < 20_000 and len(old_preds) < 20_000 and len(old_outs) < 20_000:
                return total
