"""Persistence (SQLAlchemy 2): SQLite by default, PostgreSQL in production, one schema via Alembic.

One transaction per batch writes bucket deltas, join-state changes, dead letters, counters and the
source positions reached, so a crash never leaves offsets ahead of state (exactly-once effect).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config as AlembicConfig
from sqlalchemy import Connection, Engine, and_, case, create_engine, delete, event, func, select, tuple_
from sqlalchemy.dialects import postgresql, sqlite

from . import schema as t
from .engine import EngineResult, JoinView, OutcomeRecord, PredKey, PredRecord
from .events import DeadLetter
from .stats import BucketStats, add_encoded

DEFAULT_URL = "sqlite:///driftline.db"
NEWEST_EVENT = "newest_event_us"
"""Counter row name holding the newest event time per type, in microseconds (kept monotonic)."""
_CHUNK = 500


class StoreUnavailable(RuntimeError):
    """The database cannot be reached or written; the caller keeps its batch and retries."""


class StalePositions(RuntimeError):
    """A guarded batch started where the stored position no longer is: another consumer moved it (the batch is
    rolled back; the caller drops it and re-reads the stored positions)."""

    def __init__(self, stale: dict[tuple[str, int], tuple[int, int | None]]) -> None:
        self.stale = stale
        """(source, partition) → (expected start offset, stored next offset or None when no row)."""
        parts = ", ".join(f"{s}[{p}] expected {e}, stored {a}" for (s, p), (e, a) in sorted(stale.items()))
        super().__init__(f"stale batch rejected: {parts}")


@dataclass(frozen=True, slots=True)
class BucketRow:
    """One stored bucket: its key and its statistics."""

    model: str
    model_version: str
    variant: str
    bucket_start: int
    shard: int
    stats: BucketStats


def normalise_url(url: str) -> str:
    """Accept plain postgresql:// URLs and use psycopg 3 for them."""
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()


def _chunks(items: Sequence[Any], size: int = _CHUNK) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


class Store:
    """All database access of driftline; the rest of the code never sees SQL."""

    def __init__(self, url: str = DEFAULT_URL, clock: Any = time.time) -> None:
        self.url = normalise_url(url)
        self.clock = clock
        # psycopg would prepare the hot IN (...) queries after 5 runs and PostgreSQL then switches to a generic
        # plan that scans the join table (seconds per batch): never prepare server-side.
        connect_args = {"prepare_threshold": None} if self.url.startswith("postgresql+psycopg") else {}
        self.engine: Engine = create_engine(self.url, pool_pre_ping=True, connect_args=connect_args)
        self.dialect = self.engine.dialect.name
        if self.dialect == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        self._insert = sqlite.insert if self.dialect == "sqlite" else postgresql.insert

    # --- schema -------------------------------------------------------------------------------
    def migrate(self) -> None:
        """Bring the schema to the newest Alembic revisions (idempotent; feature migrations branch from 0001)."""
        cfg = AlembicConfig()
        cfg.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
        cfg.set_main_option("sqlalchemy.url", self.url.replace("%", "%%"))
        with self.engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "heads")

    @contextmanager
    def begin(self) -> Iterator[Connection]:
        """A transaction; connection problems surface as StoreUnavailable."""
        from sqlalchemy.exc import OperationalError, InterfaceError

        try:
            with self.engine.begin() as conn:
                yield conn
        except (OperationalError, InterfaceError) as err:
            raise StoreUnavailable(str(err).splitlines()[0]) from err

    def close(self) -> None:
        self.engine.dispose()

    # --- join state ---------------------------------------------------------------------------
    def _ph(self, n: int) -> str:
        """n driver-level placeholders (the hot paths bypass SQL compilation)."""
        mark = "?" if self.dialect == "sqlite" else "%s"
        return ", ".join([mark] * n)

    def load_join(self, conn: Connection, ids: Iterable[str]) -> JoinView:
        """Predictions and outcomes stored for these prediction ids."""
        view = JoinView()
        idl = sorted(set(ids))  # a fixed order: concurrent writers lock rows in the same order
        if self.dialect == "postgresql":  # one statement per table, an array parameter, rows locked in id order
            queries = [(f"SELECT {_PRED_COLS} FROM predictions WHERE prediction_id = ANY(%b::text[]) "
                        "ORDER BY prediction_id, model, variant FOR UPDATE",
                        "SELECT prediction_id, label, ts, shard, matched FROM outcomes "
                        "WHERE prediction_id = ANY(%b::text[]) ORDER BY prediction_id FOR UPDATE", (idl,))]
        else:  # SQLite serialises writers anyway
            queries = [(f"SELECT {_PRED_COLS} FROM predictions WHERE prediction_id IN ({self._ph(len(chunk))})",
                        "SELECT prediction_id, label, ts, shard, matched FROM outcomes "
                        f"WHERE prediction_id IN ({self._ph(len(chunk))})", tuple(chunk)) for chunk in _chunks(idl)]
        for pred_sql, out_sql, params in queries:
            if not idl:
                break
            for r in conn.exec_driver_sql(pred_sql, params):
                view.preds.setdefault(r[0], []).append(PredRecord(
                    r[0], r[1], r[3], r[2], r[4], r[5], bool(r[6]), r[7], r[8], r[9], bool(r[10]),
                    None if r[11] is None else json.loads(r[11])))
            for r in conn.exec_driver_sql(out_sql, params):
                view.outcomes[r[0]] = OutcomeRecord(r[0], r[1], r[2], r[3], bool(r[4]))
        return view

    def _upsert(self, conn: Connection, table: Any, rows: list[dict[str, Any]], keys: list[str],
                update: list[str]) -> None:
        if not rows:
            return
        stmt = self._insert(table)
        stmt = stmt.on_conflict_do_update(index_elements=keys, set_={c: stmt.excluded[c] for c in update})
        conn.execute(stmt, rows)

    def _add_counters(self, conn: Connection, counts: dict[tuple[str, str], int]) -> None:
        """Add to persistent counters (rows in key order, so concurrent writers cannot deadlock)."""
        rows = [{"name": n, "label": lbl, "value": v} for (n, lbl), v in sorted(counts.items()) if v]
        if not rows:
            return
        stmt = self._insert(t.counters)
        stmt = stmt.on_conflict_do_update(index_elements=["name", "label"],
                                          set_={"value": t.counters.c.value + stmt.excluded.value})
        conn.execute(stmt, rows)

    def _raise_newest(self, conn: Connection, newest: dict[str, float]) -> None:
        """Keep the greater of the stored and the batch's newest event time per type (monotonic under
        concurrent writers); stored in microseconds among the counters."""
        rows = [{"name": NEWEST_EVENT, "label": kind, "value": int(ts * 1e6)} for kind, ts in sorted(newest.items())]
        if not rows:
            return
        c = t.counters.c
        stmt = self._insert(t.counters)
        stmt = stmt.on_conflict_do_update(
            index_elements=["name", "label"],
            set_={"value": case((stmt.excluded.value > c.value, stmt.excluded.value), else_=c.value)})
        conn.execute(stmt, rows)

    def _merge_buckets(self, conn: Connection, deltas: dict[tuple[str, str, str, int, int], BucketStats]) -> None:
        if not deltas:
            return
        b = t.buckets.c
        keys = sorted(deltas)  # lock rows in key order: concurrent writers cannot deadlock
        existing: dict[tuple[str, str, str, int, int], bytes] = {}
        cols = (b.model, b.model_version, b.variant, b.bucket_start, b.shard)
        if self.dialect == "postgresql":  # one statement over key arrays; rows locked in key order
            for r in conn.exec_driver_sql(
                    f"SELECT {_BUCKET_KEY}, b.data FROM buckets b JOIN unnest({_BUCKET_ARRAYS}) "
                    f"AS k({_BUCKET_KEY}) USING ({_BUCKET_KEY}) ORDER BY {_BUCKET_KEY} FOR UPDATE OF b",
                    tuple(map(list, zip(*keys)))):
                existing[tuple(r[:5])] = r[5]  # type: ignore[index]
        else:
            for chunk in _chunks(keys, 200):
                for r in conn.execute(select(*cols, b.data).where(tuple_(*cols).in_(list(chunk)))):
                    existing[(r.model, r.model_version, r.variant, r.bucket_start, r.shard)] = r.data
        data = [deltas[key].to_bytes() if (old := existing.get(key)) is None else add_encoded(old, deltas[key])
                for key in keys]
        if self.dialect == "postgresql":
            conn.exec_driver_sql(
                f"INSERT INTO buckets ({_BUCKET_KEY}, data) SELECT * FROM unnest({_BUCKET_ARRAYS}, %b::bytea[]) "
                f"ON CONFLICT ({_BUCKET_KEY}) DO UPDATE SET data = excluded.data",
                (*map(list, zip(*keys)), data))
        else:
            rows = [{"model": k[0], "model_version": k[1], "variant": k[2], "bucket_start": k[3], "shard": k[4],
                     "data": d} for k, d in zip(keys, data)]
            self._upsert(conn, t.buckets, rows, ["model", "model_version", "variant", "bucket_start", "shard"],
                         ["data"])

    def commit_batch(self, conn: Connection, result: EngineResult, dead: Sequence[DeadLetter],
                     positions: dict[tuple[str, int], int], meta: dict[str, str] | None = None,
                     expected_positions: dict[tuple[str, int], int] | None = None) -> None:
        # (the newest event time per type comes from result.max_ts; see newest_event())
        """Write one batch's effect in the caller's transaction.

        With `expected_positions`, the position of each listed (source, partition) moves only if the stored next
        offset still equals the expected one (a missing row counts as 0); otherwise StalePositions is raised
        before anything else is written, so the caller's transaction rolls back (fences a zombie consumer).
        """
        if expected_positions:
            self._guard_positions(conn, positions, expected_positions)
            positions = {k: v for k, v in positions.items() if k not in expected_positions}
        self._merge_buckets(conn, result.deltas)
        if result.upserts:
            rows = [_pred_tuple(r) for r in result.upserts.values()]
            conflict = ("ON CONFLICT (prediction_id, model, variant) DO UPDATE SET label = excluded.label, "
                        "label_ts = excluded.label_ts, implicit = excluded.implicit")
            if self.dialect == "postgresql":  # one statement over column arrays instead of a statement per row
                rows.sort(key=lambda r: r[:3])
                conn.exec_driver_sql(f"INSERT INTO predictions ({_PRED_COLS}) SELECT * FROM unnest({_PRED_ARRAYS}) "
                                     + conflict, tuple(map(list, zip(*rows))))
            else:
                conn.exec_driver_sql(f"INSERT INTO predictions ({_PRED_COLS}) VALUES ({self._ph(12)}) " + conflict,
                                     rows)
        for chunk in _chunks(sorted(result.deletes)):
            p = t.predictions.c
            conn.execute(delete(t.predictions).where(tuple_(p.prediction_id, p.model, p.variant).in_(list(chunk))))
        if result.outcomes:
            outs = sorted((o.prediction_id, o.label, o.ts, o.shard, o.matched) for o in result.outcomes.values())
            conflict = ("ON CONFLICT (prediction_id) DO UPDATE SET label = excluded.label, ts = excluded.ts, "
                        "matched = excluded.matched")
            if self.dialect == "postgresql":
                conn.exec_driver_sql("INSERT INTO outcomes (prediction_id, label, ts, shard, matched) SELECT * FROM "
                                     "unnest(%b::text[], %b::smallint[], %b::float8[], %b::int[], %b::bool[]) "
                                     + conflict, tuple(map(list, zip(*outs))))
            else:
                conn.exec_driver_sql("INSERT INTO outcomes (prediction_id, label, ts, shard, matched) VALUES "
                                     f"({self._ph(5)}) " + conflict, outs)
        for chunk in _chunks(sorted(result.outcome_deletes)):
            conn.execute(delete(t.outcomes).where(t.outcomes.c.prediction_id.in_(list(chunk))))
        if dead:
            now = float(self.clock())
            conn.execute(t.dead_letters.insert(), [
                {"received_at": now, "reason": d.reason, "detail": d.detail, "source": d.source,
                 "partition": d.partition, "offset": d.offset, "raw": d.raw} for d in dead])
        counts: dict[tuple[str, str], int] = dict(result.counters)
        for d in dead:
            counts[("dead_letters", d.reason)] = counts.get(("dead_letters", d.reason), 0) + 1
        self._add_counters(conn, counts)
        self._raise_newest(conn, result.max_ts)
        self._upsert(conn, t.positions, [{"source": s, "partition": p, "next_offset": n}
                                         for (s, p), n in positions.items()], ["source", "partition"],
                     ["next_offset"])
        if meta:
            self._upsert(conn, t.meta, [{"key": k, "value": v} for k, v in meta.items()], ["key"], ["value"])

    def _guard_positions(self, conn: Connection, positions: dict[tuple[str, int], int],
                         expected: dict[tuple[str, int], int]) -> None:
        """Compare-and-set of the stored next offsets (row lock held to the end of the transaction)."""
        p = t.positions.c
        stale: dict[tuple[str, int], tuple[int, int | None]] = {}
        for (source, partition), start in sorted(expected.items()):
            new = positions.get((source, partition), start)
            where = and_(p.source == source, p.partition == partition)
            done = conn.execute(t.positions.update().where(and_(where, p.next_offset == start))
                                .values(next_offset=new)).rowcount
            if done != 1 and start == 0:  # no row yet means 0; RETURNING: psycopg reports no rowcount here
                ins = self._insert(t.positions).values(source=source, partition=partition, next_offset=new)
                ins = ins.on_conflict_do_nothing(index_elements=["source", "partition"]).returning(p.partition)
                done = 1 if conn.execute(ins).first() is not None else 0
            if done != 1:
                stale[(source, partition)] = (start, conn.execute(select(p.next_offset).where(where))
                                              .scalar_one_or_none())
        if stale:
            raise StalePositions(stale)

    # --- positions, meta, counters ------------------------------------------------------------
    def positions(self, source: str) -> dict[int, int]:
        """Next offset to read per partition of a source, as stored with the state."""
        with self.begin() as conn:
            q = select(t.positions.c.partition, t.positions.c.next_offset).where(t.positions.c.source == source)
            return {r.partition: r.next_offset for r in conn.execute(q)}

    def get_meta(self, conn: Connection, key: str) -> str | None:
        return conn.execute(select(t.meta.c.value).where(t.meta.c.key == key)).scalar_one_or_none()

    def meta(self, key: str) -> str | None:
        with self.begin() as conn:
            return self.get_meta(conn, key)

    def set_meta(self, key: str, value: str) -> None:
        with self.begin() as conn:
            self._upsert(conn, t.meta, [{"key": key, "value": value}], ["key"], ["value"])

    def counters(self) -> dict[tuple[str, str], int]:
        """Persistent pipeline counters: (name, label) → total."""
        with self.begin() as conn:
            q = select(t.counters).where(t.counters.c.name != NEWEST_EVENT)
            return {(r.name, r.label): int(r.value) for r in conn.execute(q)}

    def newest_event(self, kind: str | None = None) -> float | None:
        """Newest event time stored for a type ('prediction'/'outcome'), or of either (the event-time
        watermark that drives maturity, expiry and default windows); None before any event."""
        c = t.counters.c
        q = select(func.max(c.value)).where(c.name == NEWEST_EVENT)
        if kind is not None:
            q = q.where(c.label == kind)
        with self.begin() as conn:
            value = conn.execute(q).scalar_one_or_none()
        return None if value is None else value / 1e6

    def join_size(self) -> int:
        """Predictions held in the join state (waiting for, or keeping, their label until the horizon)."""
        with self.begin() as conn:
            return int(conn.execute(select(func.count()).select_from(t.predictions)).scalar_one())

    def dead_letters(self, limit: int = 100, reason: str | None = None) -> list[dict[str, Any]]:
        """Newest dead letters first."""
        q = select(t.dead_letters).order_by(t.dead_letters.c.id.desc()).limit(limit)
        if reason:
            q = q.where(t.dead_letters.c.reason == reason)
        with self.begin() as conn:
            return [dict(r._mapping) for r in conn.execute(q)]

    def pending_outcomes(self) -> int:
        """Outcomes still waiting for their prediction."""
        with self.begin() as conn:
            q = select(func.count()).select_from(t.outcomes).where(t.outcomes.c.matched.is_(False))
            return int(conn.execute(q).scalar_one())

    # --- maintenance queries ------------------------------------------------------------------
    def _claim(self, q: Any) -> Any:
        """On PostgreSQL, lock the selected join rows and skip rows another transaction holds, so concurrent
        maintenance passes and consumers never move the same prediction's counts twice."""
        return q.with_for_update(skip_locked=True) if self.dialect == "postgresql" else q

    def unlabelled_before(self, conn: Connection, cutoff: float, shards: Sequence[int] | None,
                          limit: int = 50_000) -> list[PredRecord]:
        """Unlabelled predictions made before cutoff (for the implicit-negative policy)."""
        p = t.predictions.c
        q = select(t.predictions).where(and_(p.label.is_(None), p.ts < cutoff)).limit(limit)
        if shards is not None:
            q = q.where(p.shard.in_(list(shards)))
        return [_rec(r) for r in conn.execute(self._claim(q))]

    def joins_before(self, conn: Connection, cutoff: float, shards: Sequence[int] | None,
                     limit: int = 50_000) -> tuple[list[PredRecord], list[OutcomeRecord]]:
        """Join state older than cutoff (past the label horizon)."""
        p, o = t.predictions.c, t.outcomes.c
        qp = select(t.predictions).where(p.ts < cutoff).limit(limit)
        qo = select(t.outcomes).where(o.ts < cutoff).limit(limit)
        if shards is not None:
            qp, qo = qp.where(p.shard.in_(list(shards))), qo.where(o.shard.in_(list(shards)))
        preds = [_rec(r) for r in conn.execute(self._claim(qp))]
        outs = [OutcomeRecord(r.prediction_id, r.label, r.ts, r.shard, bool(r.matched))
                for r in conn.execute(self._claim(qo))]
        return preds, outs

    # --- analysis queries ---------------------------------------------------------------------
    def buckets(self, model: str | None, start: float, end: float, variant: str | None = None,
                model_version: str | None = None, features: bool | str = True) -> list[BucketRow]:
        """Stored buckets whose start lies in [start, end) (feature histograms only when asked)."""
        b = t.buckets.c
        q = select(t.buckets).where(and_(b.bucket_start >= start, b.bucket_start < end))
        if model is not None:
            q = q.where(b.model == model)
        if variant is not None:
            q = q.where(b.variant == variant)
        if model_version is not None:
            q = q.where(b.model_version == model_version)
        with self.begin() as conn:
            return [BucketRow(r.model, r.model_version, r.variant, r.bucket_start, r.shard,
                              BucketStats.from_bytes(r.data, features)) for r in conn.execute(q)]

    def bucket_range(self, model: str | None) -> tuple[int, int] | None:
        """Earliest and latest bucket start stored (for a model)."""
        b = t.buckets.c
        q = select(func.min(b.bucket_start), func.max(b.bucket_start))
        if model is not None:
            q = q.where(b.model == model)
        with self.begin() as conn:
            lo, hi = conn.execute(q).one()
        return None if lo is None else (int(lo), int(hi))

    def models(self) -> list[str]:
        with self.begin() as conn:
            return [r[0] for r in conn.execute(select(t.buckets.c.model).distinct().order_by(t.buckets.c.model))]


def _rec(r: Any) -> PredRecord:
    return PredRecord(r.prediction_id, r.model, r.model_version, r.variant, r.ts, r.score, bool(r.flagged),
                      r.shard, r.label, r.label_ts, bool(r.implicit),
                      None if r.slice_values is None else json.loads(r.slice_values))


_PRED_COLS = ("prediction_id, model, variant, model_version, ts, score, flagged, shard, label, label_ts, implicit, "
              "slice_values")
_BUCKET_KEY = "model, model_version, variant, bucket_start, shard"
_BUCKET_ARRAYS = "%b::text[], %b::text[], %b::text[], %b::int8[], %b::int[]"
"""PostgreSQL key arrays of buckets, in _BUCKET_KEY order."""
_PRED_ARRAYS = ("%b::text[], %b::text[], %b::text[], %b::text[], %b::float8[], %b::float8[], %b::bool[], %b::int[], "
                "%b::smallint[], %b::float8[], %b::bool[], %b::text[]")
"""PostgreSQL column arrays of a predictions upsert, in _PRED_COLS order."""


def _pred_tuple(r: PredRecord) -> tuple[Any, ...]:
    return (r.prediction_id, r.model, r.variant, r.model_version, r.ts, r.score, r.flagged, r.shard, r.label,
            r.label_ts, r.implicit, None if r.slice_values is None else json.dumps(r.slice_values))


__all__ = ["Store", "StoreUnavailable", "StalePositions", "BucketRow", "DEFAULT_URL", "PredKey"]
