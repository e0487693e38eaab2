"""Persistence (SQLAlchemy 2): SQLite by default, PostgreSQL in production, one schema via Alembic.

One transaction per batch writes bucket deltas, join-state changes, dead letters, counters and the
source positions reached, so a crash never leaves offsets ahead of state (exactly-once effect).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, and_, case, create_engine, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError

from . import (bucket_writes, calls, labels, locking, pg_missing, pgconnect, pgfence, pgsession, pgtail, revisions,
               sqlite_binding)
from . import schema as t
from .bucket_row import BucketRow
from .errors import (LockWaitCancelled, NotADatabase, SchemaMissing, SessionLost, StalePositions, StoreUnavailable,
                     WriteLocked)
from .join_rows import JoinRows
from .store_queries import LAST_STORED, NEWEST_EVENT, StoreQueries
from .urls import normalise_url, sqlite_file
from ..core.engine import EngineResult, JoinView, OutcomeRecord, PredKey, PredRecord
from ..core.events import DeadLetter
from ..core.labels import Admitted
from ..core.limits import NAMED_COUNTERS, OVER_LIMIT_COUNTER, UNDECLARED_COUNTER

log = logging.getLogger("driftline.storage")

DEFAULT_URL = "sqlite:///driftline.db"


class Store(StoreQueries):
    """All database access of driftline; the rest of the code never sees SQL."""

    def __init__(self, url: str = DEFAULT_URL, clock: Any = time.time,
                 lock_timeout_s: float = locking.DEFAULT_LOCK_TIMEOUT_S,
                 sqlite_cache_mb: int = locking.WRITE_CACHE_MB) -> None:
        self.url = normalise_url(url)
        self.clock = clock
        self.lock_timeout_s = lock_timeout_s
        # psycopg would prepare the hot IN (...) queries after 5 runs and PostgreSQL then switches to a generic
        # plan that scans the join table (seconds per batch): never prepare server-side.
        # Read committed whatever the database's default: a repeatable-read snapshot is taken before a write
        # transaction waits for the write lock, so it would miss the writer it waited for (SerializationFailure,
        # or a migration not seeing the tables just created).
        pg = self.url.startswith("postgresql+psycopg")
        connect_args = {"prepare_threshold": None, "client_encoding": "utf8", **pgconnect.session_args(self.url)
                        } if pg else {}
        options = {"isolation_level": "READ COMMITTED"} if pg else {}
        self.engine: Engine = create_engine(self.url, pool_pre_ping=True, connect_args=connect_args, **options)
        self.dialect = self.engine.dialect.name
        self.calls = calls.DbCalls()
        self._reached = False  # a transaction has succeeded: a database that vanishes later is an outage
        """The database calls in flight (read by /readyz and the stall warning: never a query)."""
        calls.install(self.engine, self.calls)
        if pg:
            pgsession.install(self.engine)
        self.join = JoinRows(self.dialect)
        """The join state (all its SQL is in join_rows)."""
        if self.dialect == "sqlite":
            locking.install_sqlite(self.engine, lock_timeout_s, sqlite_cache_mb)
            sqlite_binding.register_adapters()
        self._insert = sqlite.insert if self.dialect == "sqlite" else postgresql.insert

    # --- schema -------------------------------------------------------------------------------
    def migrate(self) -> None:
        """Bring the schema to the newest Alembic revisions (idempotent; feature migrations branch from 0001).
        A database already at the script heads is only read (Alembic is not even imported, so a query command
        starts fast). Otherwise serialised across processes by the write lock (replicas starting together: the
        second one waits, then finds the schema current). An unreachable or unopenable database raises
        StoreUnavailable; a SQLite path that is a directory or not a database raises NotADatabase; a database
        migrated by a newer driftline (a revision no script here defines) raises SchemaTooNew, untouched; a migration
        statement the database refuses (a schema changed by hand) raises MigrationFailed, nothing changed."""
        path = sqlite_file(self.url)
        if path is not None and os.path.isdir(path):
            raise NotADatabase(f"{path} is a directory, not a SQLite database file")
        with self.read() as conn:
            stored = revisions.stored_revisions(conn)
        if stored == revisions.script_heads():
            return
        revisions.refuse_newer_schema(stored)
        from alembic import command  # only here: importing Alembic costs more than most queries
        from alembic.config import Config as AlembicConfig

        cfg = AlembicConfig()
        cfg.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
        cfg.set_main_option("sqlalchemy.url", self.url.replace("%", "%%"))
        with self.write() as conn:
            locked = revisions.stored_revisions(conn)  # a newer replica may have migrated since
            revisions.refuse_newer_schema(locked)
            cfg.attributes["connection"] = conn
            try:
                command.upgrade(cfg, "heads")
            except DBAPIError as err:  # rolled back on the way out; an outage stays StoreUnavailable (retried)
                if revisions.refused_statement(self.dialect, err):
                    raise revisions.migration_failed(stored, err) from err
                raise
            note = revisions.migrated_note(locked, revisions.stored_revisions(conn))
        if note:
            log.warning(note)

    def schema_is_current(self) -> bool:
        """Whether the database records exactly the migration scripts' heads (one read, no Alembic)."""
        with self.read() as conn:
            return revisions.stored_revisions(conn) == revisions.script_heads()

    @contextmanager
    def write(self, wait_s: float | None = None) -> Iterator[Connection]:
        """A write transaction: every read-modify-write of the state (ingestion batches, maintenance, compaction,
        trigger states, references) runs in one, holding the database write lock from its first statement
        (SQLite BEGIN IMMEDIATE, a PostgreSQL advisory lock), so concurrent writers never lose an update. A lock
        not obtained within `wait_s` (default `lock_timeout_s`) raises WriteLocked; a connection problem, or a table
        lock of another session (VACUUM FULL, LOCK TABLE) held past `wait_s` once the lock is held, StoreUnavailable
        (nothing written)."""
        with self._transaction(write=True, wait_s=self.lock_timeout_s if wait_s is None else wait_s) as conn:
            yield conn

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read-only transaction (one consistent snapshot; never waits for writers)."""
        with self._transaction(write=False) as conn:
            yield conn

    begin = write
    """Any transaction that may write: prefer write() or read(), which say what they do."""

    @contextmanager
    def _transaction(self, write: bool, wait_s: float = 0.0) -> Iterator[Connection]:
        from sqlalchemy.exc import DatabaseError, OperationalError, InterfaceError

        ok = locked = False
        self.calls.begin("write" if write else "read")
        try:
            with self.engine.connect() as conn:
                self.calls.idle()
                if write:
                    conn = conn.execution_options(**{locking.WRITE: True, locking.WAIT: wait_s})
                with conn.begin():
                    if write and self.dialect == "postgresql":
                        locking.lock_postgres(conn, wait_s)
                        locked = True
                    elif self.dialect == "postgresql":  # a table lock taken outside driftline (VACUUM FULL, ALTER
                        locking.bound_read(conn, self.lock_timeout_s)  # TABLE) held the consumer's loop for good
                    yield conn
            ok = self._reached = True
        except (OperationalError, InterfaceError) as err:
            if write and locked and locking.gave_up_waiting(err):  # holding driftline's lock: another session's
                raise StoreUnavailable(  # table lock (tryout: a LOCK TABLE was reported as another driftline writer)
                    f"a write waited more than {wait_s:g}s for a table lock another database session holds (a VACUUM "
                    "FULL, ALTER TABLE or LOCK TABLE?); nothing written") from err
            if write and not locked and self.dialect == "postgresql" and locking.cancelled(err):
                raise LockWaitCancelled("the wait for the database write lock (held by another driftline writer) "
                                        "was cancelled: the process is stopping; nothing written") from err
            if write and locking.gave_up_waiting(err):
                raise WriteLocked(
                    f"another driftline writer held the database write lock for more than {wait_s:g}s"
                    " (nothing written; run again when it is done)") from err
            if not write and locking.gave_up_waiting(err):
                raise StoreUnavailable(
                    f"a read waited more than {self.lock_timeout_s:g}s for a table lock another database session "
                    "holds (a VACUUM FULL, ALTER TABLE or LOCK TABLE?)") from err
            if not self._reached:  # a wrong name from the start: no retry mends it; one dropped under a running
                pg_missing.refuse_missing(self.url, err)  # process (a restore) is waited for like any outage
                if self.dialect == "sqlite" and "readonly database" in str(err):
                    raise NotADatabase(read_only_sqlite(sqlite_file(self.url) or self.url)) from None
            if self.dialect == "sqlite" and "readonly database" in str(err):  # opened, then a write refused
                raise StoreUnavailable(read_only_sqlite(sqlite_file(self.url) or self.url)) from err
            if self._reached and getattr(err, "connection_invalidated", False):  # the session ended under it
                raise SessionLost(str(err).splitlines()[0]) from err
            raise StoreUnavailable(str(err).splitlines()[0]) from err
        except DatabaseError as err:
            if self._reached and type(getattr(err, "orig", None)).__name__ == "UndefinedTable":
                # the database was dropped and recreated empty under a running process (SRE tryout: `run` crashed
                # with "unexpected ProgrammingError"): an outage until a restart migrates it, as /readyz says
                raise SchemaMissing(f"database schema missing (recreated empty? restart driftline to migrate it): "
                                    f"{str(err).splitlines()[0]}") from err
            if self.dialect == "sqlite" and "file is not a database" in str(err):
                raise NotADatabase(f"{sqlite_file(self.url) or self.url} is not a SQLite database (a wrong --db path?)"
                                   ) from None
            raise
        finally:
            self.calls.end(ok)

    def check_writable(self) -> None:
        """An empty write transaction: takes the write lock and commits (WriteLocked or StoreUnavailable when it
        cannot): a successful read says nothing about whether this process can write."""
        with self.write():
            pass

    def close(self) -> None:
        self.engine.dispose()

    # --- join state ---------------------------------------------------------------------------
    def load_join(self, conn: Connection, ids: Iterable[str]) -> JoinView:
        """Predictions and outcomes stored for these prediction ids."""
        return self.join.load(conn, ids)

    def _upsert(self, conn: Connection, table: Any, rows: list[dict[str, Any]], keys: list[str],
                update: list[str]) -> None:
        if not rows:
            return
        stmt = self._insert(table)
        stmt = stmt.on_conflict_do_update(index_elements=keys, set_={c: stmt.excluded[c] for c in update})
        conn.execute(stmt, rows)

    def _add_counters(self, conn: Connection, counts: dict[tuple[str, str], int]) -> None:
        """Add to persistent counters (rows in key order, so concurrent writers cannot deadlock); undeclared
        feature names beyond MAX_UNDECLARED_NAMES stored ones, and over-limit ones beyond MAX_OVER_LIMIT_NAMES, are
        not recorded by name."""
        rows = [{"name": n, "label": lbl, "value": v} for n, lbl, v in self._counter_rows(conn, counts)]
        if not rows:
            return
        stmt = self._insert(t.counters)
        stmt = stmt.on_conflict_do_update(index_elements=["name", "label"],
                                          set_={"value": t.counters.c.value + stmt.excluded.value})
        conn.execute(stmt, rows)

    def _counter_rows(self, conn: Connection, counts: dict[tuple[str, str], int]) -> list[tuple[str, str, int]]:
        """(name, label, value) to add, in key order, without zeros and names beyond their bound (_add_counters)."""
        for name, most in NAMED_COUNTERS.items():
            if any(n == name for n, _ in counts):
                counts = self._bound_names(conn, counts, name, most)
        return [(n, lbl, v) for (n, lbl), v in sorted(counts.items()) if v]

    @staticmethod
    def _bound_names(conn: Connection, counts: dict[tuple[str, str], int], name: str,
                     most: int) -> dict[tuple[str, str], int]:
        c = t.counters.c
        stored = {r.label for r in conn.execute(select(c.label).where(c.name == name))}
        room = most - len(stored)
        out = {}
        for (n, lbl), v in sorted(counts.items()):
            if n == name and lbl not in stored:
                if room <= 0:
                    continue
                room -= 1
            out[(n, lbl)] = v
        return out

    def undeclared_features(self) -> dict[str, int]:
        """Feature names seen in events but not declared under `features:` (all models, all time) → occurrences
        refused; at most MAX_UNDECLARED_NAMES names (the total is the `features_untracked` counter)."""
        return self._named(UNDECLARED_COUNTER)

    def over_limit_features(self) -> dict[str, int]:
        """Feature names refused in a bucket already tracking `max_features` names (all models, all time) →
        occurrences refused; at most MAX_OVER_LIMIT_NAMES names (the total is `features_untracked{over_limit}`)."""
        return self._named(OVER_LIMIT_COUNTER)

    def _named(self, name: str) -> dict[str, int]:
        c = t.counters.c
        with self.read() as conn:
            q = select(c.label, c.value).where(c.name == name)
            return {r.label: int(r.value) for r in conn.execute(q)}

    def _raise_newest(self, conn: Connection, newest: dict[tuple[str, str], float]) -> None:
        """Keep the greater of the stored and the batch's time per (counter name, type) (monotonic under concurrent
        writers); stored in microseconds among the counters (names NEWEST_EVENT and LAST_STORED), all in one
        statement (a round trip to the database each cost about as much as the rows)."""
        rows = [{"name": name, "label": kind, "value": int(ts * 1e6)} for (name, kind), ts in sorted(newest.items())]
        if not rows:
            return
        c = t.counters.c
        stmt = self._insert(t.counters)
        stmt = stmt.on_conflict_do_update(
            index_elements=["name", "label"],
            set_={"value": case((stmt.excluded.value > c.value, stmt.excluded.value), else_=c.value)})
        conn.execute(stmt, rows)

    def commit_batch(self, conn: Connection, result: EngineResult, dead: Sequence[DeadLetter],
                     positions: dict[tuple[str, int], int], meta: dict[str, str] | None = None,
                     expected_positions: dict[tuple[str, int], int] | None = None) -> None:
        # (the newest event time per type comes from result.max_ts; see newest_event())
        """Write one batch's effect in the caller's transaction.

        With `expected_positions`, the position of each listed (source, partition) moves only if the stored next
        offset still equals the expected one (a missing row counts as 0); otherwise StalePositions is raised
        before anything else is written, so the caller's transaction rolls back (fences a zombie consumer).
        """
        fence = None
        if expected_positions and self.dialect == "postgresql":  # one round trip with the first bucket read
            fence = pgfence.pending([(s, p, start, positions.get((s, p), start))
                                     for (s, p), start in sorted(expected_positions.items())])
        elif expected_positions:
            self._guard_positions(conn, positions, expected_positions)
        if expected_positions:
            positions = {k: v for k, v in positions.items() if k not in expected_positions}
        bucket_writes.merge_buckets(conn, self.dialect, result.deltas, fence)
        self.join.write(conn, result)
        if dead:
            now = float(self.clock())
            conn.execute(t.dead_letters.insert(), [
                {"received_at": now, "reason": d.reason, "detail": d.detail, "source": d.source,
                 "partition": d.partition, "offset": d.offset, "raw": d.raw} for d in dead])
        counts: dict[tuple[str, str], int] = dict(result.counters)
        for d in dead:
            counts[("dead_letters", d.reason)] = counts.get(("dead_letters", d.reason), 0) + 1
        newest = {(NEWEST_EVENT, kind): ts for kind, ts in result.max_ts.items()}
        if result.max_ts:  # when they arrived, by this writer's clock: the freshness every replica exports
            now = float(self.clock())
            newest.update({(LAST_STORED, kind): now for kind in result.max_ts})
        if self.dialect == "postgresql":  # the same upserts, pipelined (one round trip)
            pgtail.write(conn, self._counter_rows(conn, counts),
                         [(name, kind, int(ts * 1e6)) for (name, kind), ts in sorted(newest.items())],
                         [(s, p, n) for (s, p), n in positions.items()], list((meta or {}).items()))
            return
        self._add_counters(conn, counts)
        self._raise_newest(conn, newest)
        self._upsert(conn, t.positions, [{"source": s, "partition": p, "next_offset": n}
                                         for (s, p), n in positions.items()], ["source", "partition"],
                     ["next_offset"])
        if meta:
            self._upsert(conn, t.meta, [{"key": k, "value": v} for k, v in meta.items()], ["key"], ["value"])

    def _guard_positions(self, conn: Connection, positions: dict[tuple[str, int], int],
                         expected: dict[tuple[str, int], int]) -> None:
        """Compare-and-set of the stored next offsets (row lock held to the end of the transaction); on PostgreSQL one
        statement for all partitions (pgfence)."""
        if self.dialect == "postgresql":
            stale = pgfence.guard(conn, [(s, p, start, positions.get((s, p), start))
                                         for (s, p), start in sorted(expected.items())])
            if stale:
                raise StalePositions(stale)
            return
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

    # --- admitted label values ----------------------------------------------------------------
    def admitted_labels(self, conn: Connection) -> Admitted:
        """The admitted models, variants and versions, read in the batch's transaction."""
        return labels.load(conn)

    def admit_labels(self, conn: Connection, rows: Sequence[tuple[str, str, str]]) -> None:
        """Store (model, kind, value) rows a batch admitted, in its transaction (ON CONFLICT DO NOTHING)."""
        labels.admit(conn, self._insert, rows, float(self.clock()))

    def admitted_labels_list(self) -> list[tuple[str, str, str]]:
        """(model, kind, value) of every admitted value, sorted (a model's own row has value '')."""
        with self.read() as conn:
            return labels.listing(conn)

    # --- positions, meta, counters ------------------------------------------------------------
    def advance_positions(self, moves: dict[tuple[str, int], tuple[int, int]]) -> None:
        """Move stored next offsets (source, partition) → (from, to) by compare-and-set, alone in a write
        transaction (StalePositions when one moved meanwhile: nothing is written)."""
        with self.write() as conn:
            self._guard_positions(conn, {k: to for k, (_, to) in moves.items()},
                                  {k: start for k, (start, _) in moves.items()})

    def set_meta(self, key: str, value: str) -> None:
        with self.write() as conn:
            self._upsert(conn, t.meta, [{"key": key, "value": value}], ["key"], ["value"])

    # --- maintenance queries (join_rows.JoinRows) --------------------------------------------------
    def unlabelled_before(self, conn: Connection, cutoff: float, shards: Sequence[int] | None,
                          limit: int = 50_000) -> list[PredRecord]:
        """Unlabelled predictions made before cutoff (for the implicit-negative policy)."""
        return self.join.unlabelled_before(conn, cutoff, shards, limit)

    def joins_before(self, conn: Connection, cutoff: float, shards: Sequence[int] | None,
                     limit: int = 50_000) -> tuple[list[PredRecord], list[OutcomeRecord]]:
        """Join state older than cutoff (past the label horizon)."""
        return self.join.before(conn, cutoff, shards, limit)


__all__ = ["Store", "StoreUnavailable", "StalePositions", "BucketRow", "DEFAULT_URL", "PredKey"]


def read_only_sqlite(path: str) -> str:
    """Why this user cannot open or write the SQLite file `path` (SQLite's 'attempt to write a readonly database', which read
    as an outage, `database unavailable`, exit 3): the file or its folder it may not write. WAL mode writes beside
    the file (-wal, -shm) even to read, so a query command needs both, unless the -shm file is already there."""
    folder = os.path.dirname(os.path.abspath(path))
    cannot = [what for what, where, mode in (("the file", path, os.W_OK), ("its folder", folder, os.W_OK | os.X_OK))
              if not os.access(where, mode)]
    which = " and ".join(cannot) or "the file or its folder"
    return (f"cannot write the SQLite database {path}: this user may not write {which} (driftline opens it in WAL "
            "mode, which keeps -wal and -shm files beside it, also to read); run as the user that owns it, or give "
            "this user write access to the file and its folder")

