"""Compaction of old buckets: hourly buckets (all shards) older than the label horizon are merged into one
bucket per (model, model version, variant, UTC day), stored under shard COMPACTED_SHARD (-1).

Safe because buckets past the label horizon no longer change (their predictions' join state has expired) and
buckets merge by addition: a window that covers whole days gives exactly the same numbers before and after
(ISO-week reports, daily trends, 7-day windows ending at midnight). A window starting or ending mid-day over
compacted history leaves out the day it cuts (readouts.windows.window_rows; `metrics` names it: cut_days). Nothing
is dropped. The engine never writes shard -1, so a
late write to an old hourly bucket (a replayed old event) simply lands next to the compacted row and is merged
by the next run; on PostgreSQL the rows are locked (FOR UPDATE) while merged, as the ingestion path does.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Table, and_, delete, select, tuple_, update

from . import schema as t
from ..core.feature_blob import encode_features
from ..core.stats import BucketStats
from .store import Store

COMPACTED_SHARD = -1
"""Shard id of compacted day buckets (ingestion shards are partitions, never negative)."""
DAY_S = 86400
GRACE_S = DAY_S
"""Extra margin past the label horizon before a day is compacted."""

Key = tuple[str, str, str, int, int]


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """What a compaction run did: day groups merged, bucket rows before and after, the cutoff used."""

    groups: int
    rows_before: int
    rows_after: int
    cutoff: float | None

    def to_json(self) -> dict[str, object]:
        return {"groups": self.groups, "rows_before": self.rows_before, "rows_after": self.rows_after,
                "cutoff": self.cutoff}


def due_cutoff(store: Store, horizon_s: float, grace_s: float = GRACE_S, width: int = DAY_S) -> float | None:
    """Start of the first day that is never to be compacted: event-time watermark − label horizon − grace, floored to
    a day (every day before it is compacted once its predictions have expired)."""
    newest = store.newest_event()
    if newest is None:
        return None
    return float((int(newest - horizon_s - grace_s) // width) * width)


def compaction_cutoff(store: Store, horizon_s: float, grace_s: float = GRACE_S, width: int = DAY_S) -> float | None:
    """Start of the first day not compacted now: `due_cutoff`, but never past the day of the oldest prediction still
    held for joining: its outcome or correction would write an hourly row into a merged day (verify tryout:
    `compact` run with a shorter horizon than the service's merged days whose labels were still coming)."""
    cutoff = due_cutoff(store, horizon_s, grace_s, width)
    oldest = store.oldest_prediction() if cutoff is not None else None
    if cutoff is None or oldest is None:
        return cutoff
    return float(min(cutoff, (int(oldest) // width) * width))


def compacted_days(store: Store, model: str | None, lo: float, hi: float) -> list[int]:
    """Starts of the compacted day rows (of a model) starting in [lo, hi), each once."""
    b = t.buckets.c
    q = select(b.bucket_start).where(and_(b.shard == COMPACTED_SHARD, b.bucket_start >= lo, b.bucket_start < hi))
    if model is not None:
        q = q.where(b.model == model)
    with store.read() as conn:
        return sorted({int(r[0]) for r in conn.execute(q.distinct())})


def _pending_groups(store: Store, cutoff: float, width: int, model: str | None) -> dict[Key, list[Key]]:
    b = t.buckets.c
    q = select(b.model, b.model_version, b.variant, b.bucket_start, b.shard).where(b.bucket_start < cutoff)
    if model is not None:
        q = q.where(b.model == model)
    groups: dict[Key, list[Key]] = defaultdict(list)
    with store.read() as conn:
        for r in conn.execute(q):
            day = (int(r.bucket_start) // width) * width
            groups[(r.model, r.model_version, r.variant, day, COMPACTED_SHARD)].append(
                (r.model, r.model_version, r.variant, int(r.bucket_start), int(r.shard)))
    return {target: keys for target, keys in groups.items() if keys != [target]}


def _merge_group(store: Store, target: Key, keys: list[Key]) -> None:
    """Merge the group's rows into the target row, in `buckets` and in `bucket_features` (the feature histograms
    stored apart): the others' rows deleted from both, the target's written."""
    b, f = t.buckets.c, t.bucket_features.c
    cols = (b.model, b.model_version, b.variant, b.bucket_start, b.shard)
    fcols = (f.model, f.model_version, f.variant, f.bucket_start, f.shard)
    with store.write() as conn:
        q = select(*cols, b.data).where(tuple_(*cols).in_(keys)).order_by(*cols)  # a fixed float summing order
        fq = select(*fcols, f.data).where(tuple_(*fcols).in_(keys))
        if store.dialect == "postgresql":
            q, fq = q.with_for_update(), fq.with_for_update()
        rows = list(conn.execute(q))
        if not rows:
            return
        stored = {_key(r): r.data for r in conn.execute(fq)}
        total = BucketStats()
        for r in rows:
            total.add(BucketStats.from_bytes(r.data, feature_data=stored.get(_key(r))))
        found_target = any(_key(r) == target for r in rows)
        others = [k for k in map(_key, rows) if k != target]
        if others:
            conn.execute(delete(t.buckets).where(tuple_(*cols).in_(others)))
        gone = [k for k in others if k in stored]
        if gone:
            conn.execute(delete(t.bucket_features).where(tuple_(*fcols).in_(gone)))
        features, total.features = total.features, {}
        _write(conn, t.buckets, cols, target, found_target, total.to_bytes())
        if features:
            _write(conn, t.bucket_features, fcols, target, target in stored, encode_features(features))


def _key(r: Any) -> Key:
    """A row's bucket key (its first five columns), typed as the keys are."""
    return (r.model, r.model_version, r.variant, int(r.bucket_start), int(r.shard))


def _write(conn: Connection, table: Table, cols: tuple[Any, ...], target: Key, found: bool, data: bytes) -> None:
    """The target row's data updated (`found`) or inserted."""
    if found:
        conn.execute(update(table).where(and_(*(c == v for c, v in zip(cols, target)))).values(data=data))
    else:
        conn.execute(table.insert().values(model=target[0], model_version=target[1], variant=target[2],
                                           bucket_start=target[3], shard=target[4], data=data))


def compact(store: Store, cutoff: float | None, model: str | None = None, width: int = DAY_S,
            max_groups: int = 2000) -> CompactionResult:
    """Merge every bucket starting before `cutoff` into one row per day and (model, version, variant); one
    transaction per day group; at most `max_groups` groups per call (the rest next time). Idempotent."""
    if cutoff is None:
        return CompactionResult(0, 0, 0, None)
    groups = _pending_groups(store, cutoff, width, model)
    done = before = after = 0
    for target, keys in sorted(groups.items())[:max_groups]:
        _merge_group(store, target, keys)
        done += 1
        before += len(keys)
        after += 1
    return CompactionResult(done, before, after, cutoff)
