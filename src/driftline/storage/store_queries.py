"""Store's read queries (positions, meta, counters, dead letters, buckets): a base class, so store.py stays small."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, and_, func, select, text

from . import labels
from . import schema as t
from ..core.labels import Admitted
from .bucket_row import BucketRow
from .pgread import fetch_binary_all

if TYPE_CHECKING:
    from .join_rows import JoinRows

NEWEST_EVENT = "newest_event_us"
"""Counter row name holding the newest event time per type, in microseconds (kept monotonic)."""
LAST_STORED = "last_stored_us"
"""Counter row name holding when (wall clock of the writer) events of a type were last stored, in microseconds
(kept monotonic): freshness follows arrivals, not event times a skewed producer clock can put a day ahead."""
TIME_ROWS = (NEWEST_EVENT, LAST_STORED)


def bucket_key(r: BucketRow) -> tuple[str, str, str, int, int]:
    """A bucket row's primary key, in the buckets table's column order."""
    return r.model, r.model_version, r.variant, r.bucket_start, r.shard


class StoreQueries:
    """The read side of Store, each query in its own read transaction (Store supplies `read` and `join`)."""

    if TYPE_CHECKING:
        join: JoinRows
        dialect: str

        def read(self) -> AbstractContextManager[Connection]: ...

    # --- positions, meta, counters ------------------------------------------------------------
    def positions(self, source: str) -> dict[int, int]:
        """Next offset to read per partition of a source, as stored with the state."""
        with self.read() as conn:
            q = select(t.positions.c.partition, t.positions.c.next_offset).where(t.positions.c.source == source)
            return {r.partition: r.next_offset for r in conn.execute(q)}

    def position_sources(self) -> list[str]:
        """Every source (replayed file, stdin, Kafka topic) a position is stored for: what fed this database."""
        with self.read() as conn:
            return sorted(conn.execute(select(t.positions.c.source).distinct()).scalars())

    def stored_positions(self, conn: Connection, keys: Sequence[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """Next offsets stored for these (source, partition) keys, read in the caller's (write) transaction."""
        p = t.positions.c
        out: dict[tuple[str, int], int] = {}
        for source, partition in sorted(keys):
            q = select(p.next_offset).where(and_(p.source == source, p.partition == partition))
            value = conn.execute(q).scalar_one_or_none()
            if value is not None:
                out[(source, partition)] = int(value)
        return out

    def get_meta(self, conn: Connection, key: str) -> str | None:
        return conn.execute(select(t.meta.c.value).where(t.meta.c.key == key)).scalar_one_or_none()

    def meta(self, key: str) -> str | None:
        with self.read() as conn:
            return self.get_meta(conn, key)

    def meta_prefixed(self, prefix: str) -> dict[str, str]:
        """Every non-empty meta row whose key starts with `prefix` (one read, e.g. all partitions' reset records)."""
        with self.read() as conn:
            q = select(t.meta.c.key, t.meta.c.value).where(t.meta.c.key.startswith(prefix, autoescape=True))
            return {r.key: r.value for r in conn.execute(q) if r.value}

    def counters(self) -> dict[tuple[str, str], int]:
        """Persistent pipeline counters: (name, label) → total, in (name, label) order on every database (JSON
        outputs built from it, such as `dead-letters --json` totals, must not follow a table's physical order)."""
        with self.read() as conn:
            q = select(t.counters).where(t.counters.c.name.not_in(TIME_ROWS)).order_by(t.counters.c.name,
                                                                                      t.counters.c.label)
            return {(r.name, r.label): int(r.value) for r in conn.execute(q)}

    def newest_event(self, kind: str | None = None) -> float | None:
        """Newest event time stored for a type ('prediction'/'outcome'), or of either (the event-time
        watermark that drives maturity, expiry and default windows); None before any event."""
        with self.read() as conn:
            return self.newest_event_in(conn, kind)

    @staticmethod
    def newest_event_in(conn: Connection, kind: str | None = None) -> float | None:
        """newest_event, read in the caller's transaction."""
        c = t.counters.c
        q = select(func.max(c.value)).where(c.name == NEWEST_EVENT)
        if kind is not None:
            q = q.where(c.label == kind)
        value = conn.execute(q).scalar_one_or_none()
        return None if value is None else value / 1e6

    def batch_start_in(self, conn: Connection) -> tuple[float | None, Admitted]:
        """newest_event_in and the admitted label values, read in the caller's (a batch's) transaction: on
        PostgreSQL both statements sent in one pipeline, one round trip instead of two (the server runs them in
        order, after the write lock, as before)."""
        if self.dialect != "postgresql":
            return self.newest_event_in(conn), labels.load(conn)
        (newest,), rows = fetch_binary_all(conn, [
            ("SELECT max(value) FROM counters WHERE name = %s", (NEWEST_EVENT,)),
            ("SELECT model, kind, value FROM admitted_labels", ())])
        return (None if newest[0] is None else newest[0] / 1e6), labels.from_rows(rows)

    def oldest_prediction(self) -> float | None:
        """Event time of the oldest prediction still held for joining (not yet expired); None when none is. One
        index seek a shard: `min(ts)` over the whole table read every entry of the `(shard, ts)` index (253,308
        SQLite VM steps against 372 on a 50 k-prediction, six-partition store; 90 days of 100 M a day at scale)."""
        with self.read() as conn:
            return conn.execute(_OLDEST).scalar_one_or_none()

    def join_shards(self) -> list[int]:
        """Every shard (partition) holding prediction join rows, ascending: what the join reads by `(shard, ts)`
        need (hourly bucket rows do not say it: every partition counts in BUCKET_SHARD's). One seek a shard."""
        with self.read() as conn:
            return [int(r[0]) for r in conn.execute(_JOIN_SHARDS)]

    def stored_shards(self) -> list[int]:
        """Every shard holding join rows of either table (predictions, or outcomes waiting for their prediction),
        ascending: what maintenance must cover. One seek a shard and table."""
        with self.read() as conn:
            return sorted({int(r[0]) for q in (_JOIN_SHARDS, _OUTCOME_SHARDS) for r in conn.execute(q)})

    def last_stored(self, kind: str | None = None) -> float | None:
        """Wall-clock time events of a type ('prediction'/'outcome'), or of either, were last stored; None before
        any (or while a database last written by an older version has none recorded yet)."""
        c = t.counters.c
        q = select(func.max(c.value)).where(c.name == LAST_STORED)
        if kind is not None:
            q = q.where(c.label == kind)
        with self.read() as conn:
            value = conn.execute(q).scalar_one_or_none()
        return None if value is None else value / 1e6

    def join_size(self) -> int:
        """Predictions held in the join state (waiting for, or keeping, their label until the horizon)."""
        with self.read() as conn:
            return self.join.size(conn)

    def dead_letters(self, limit: int = 100, reason: str | None = None) -> list[dict[str, Any]]:
        """Newest dead letters first."""
        q = select(t.dead_letters).order_by(t.dead_letters.c.id.desc()).limit(limit)
        if reason:
            q = q.where(t.dead_letters.c.reason == reason)
        with self.read() as conn:
            return [dict(r._mapping) for r in conn.execute(q)]

    def pending_outcomes(self) -> int:
        """Outcomes still waiting for their prediction."""
        with self.read() as conn:
            return self.join.pending_outcomes(conn)

    # --- analysis queries ---------------------------------------------------------------------
    def buckets(self, model: str | None, start: float, end: float, variant: str | None = None,
                model_version: str | None = None, features: bool | str = True) -> list[BucketRow]:
        """Stored buckets whose start lies in [start, end) (feature histograms, stored apart, read only when asked),
        in key order: the callers sum floats across buckets, so the order is fixed, not the table's physical one
        (PostgreSQL returns rows as they lie on disk, and two databases holding the same buckets would differ in the
        last digits).
        SQLite's rows are put in key order here: its ORDER BY copied every blob through a temp B-tree (the range is
        read by the (model, bucket_start) index), which cost more than the read itself for a 7-day window."""
        b = t.buckets.c
        q = select(t.buckets)
        if features:  # each bucket's feature row (0013_featapart) looked up by its key; none read otherwise
            f = t.bucket_features.c
            q = select(t.buckets, f.data.label("fdata")).select_from(t.buckets.outerjoin(t.bucket_features, and_(
                f.model == b.model, f.model_version == b.model_version, f.variant == b.variant,
                f.bucket_start == b.bucket_start, f.shard == b.shard)))
        q = t.for_series(q.where(and_(b.bucket_start >= start, b.bucket_start < end)), b, model, variant,
                         model_version)
        if self.dialect != "sqlite":
            q = q.order_by(*t.buckets.primary_key)  # the server's collation decides the text order
        with self.read() as conn:  # rows unpacked by position (the buckets table's columns, then fdata)
            found = conn.execute(q)
            rows = ([BucketRow.encoded(m, mv, v, s, sh, d, features, fd) for m, mv, v, s, sh, d, fd in found]
                    if features else [BucketRow.encoded(m, mv, v, s, sh, d, False) for m, mv, v, s, sh, d in found])
        if self.dialect == "sqlite":  # BINARY collation of UTF-8 text = code point order, as Python compares str
            rows.sort(key=bucket_key)
        return rows

    def bucket_range(self, model: str | None) -> tuple[int, int] | None:
        """Earliest and latest bucket start stored (for a model). Two scalar subqueries: SQLite answers a lone
        min() or max() by one seek of the (model, bucket_start) index, but both in one SELECT scanned every bucket
        of the model (1.5 ms at 8 k buckets, paid by every metrics query and scrape that finds its window)."""
        b = t.buckets.c

        def one(agg: Any) -> Any:
            q = select(agg(b.bucket_start))
            return (q if model is None else q.where(b.model == model)).scalar_subquery()

        with self.read() as conn:
            lo, hi = conn.execute(select(one(func.min), one(func.max))).one()
        return None if lo is None else (int(lo), int(hi))

    def models(self) -> list[str]:
        with self.read() as conn:
            return [r[0] for r in conn.execute(select(t.buckets.c.model).distinct().order_by(t.buckets.c.model))]


_P = t.predictions.name


def _skip_scan(table: str) -> str:
    """The shards of a join table by a recursive min over its `(shard, ts)` index (a skip scan), as the CTE `s`."""
    return (f"WITH RECURSIVE s(shard) AS (SELECT min(shard) FROM {table} UNION ALL "
            f"SELECT (SELECT min(p.shard) FROM {table} p WHERE p.shard > s.shard) FROM s WHERE s.shard IS NOT NULL) ")


_SHARDS = _skip_scan(_P)
"""The shards of the prediction join rows."""
_JOIN_SHARDS = text(_SHARDS + "SELECT shard FROM s WHERE shard IS NOT NULL")
_OUTCOME_SHARDS = text(_skip_scan(t.outcomes.name) + "SELECT shard FROM s WHERE shard IS NOT NULL")
_OLDEST = text(_SHARDS + f"SELECT min((SELECT min(p.ts) FROM {_P} p WHERE p.shard = s.shard)) FROM s "
                         f"WHERE s.shard IS NOT NULL")
