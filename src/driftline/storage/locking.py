"""Write and read transactions for several writers on one database (no read-modify-write outside a lock).

SQLite: pysqlite's legacy mode issues BEGIN only before the first INSERT/UPDATE/DELETE, so the reads of a batch
ran outside its transaction and two writers could both read, both compute and both write (lost updates). The
driver's own transaction handling is turned off and driftline emits BEGIN itself (SQLAlchemy's pysqlite recipe):
`BEGIN IMMEDIATE` for write transactions (the database write lock is taken before anything is read; others wait
up to the lock timeout), a deferred BEGIN for read transactions (WAL: readers never wait for writers).

PostgreSQL: a write transaction first takes a transaction-scoped advisory lock (`pg_advisory_xact_lock`) under a
transaction-local lock_timeout, so write transactions run one at a time; reads take no lock.
"""

from __future__ import annotations

import sqlite3
from contextlib import suppress
from typing import Any

from sqlalchemy import Connection, Engine, event, text

from . import calls

WRITE = "driftline_write"
"""Execution option marking a connection's transaction as a write transaction."""
WAIT = "driftline_wait_s"
"""Execution option: seconds this write transaction waits for the write lock (default: the store's lock timeout);
a short wait for bookkeeping that must never stall the consumer's main loop (a maintenance-ceiling heartbeat)."""
WRITE_LOCK_KEY = 0x6472_6966_746C + 16
"""PostgreSQL advisory lock key serialising write transactions (and migrations) of every driftline process."""
BUSY_MS = "driftline_busy_ms"
"""Key of a SQLite connection's busy_timeout as last set (the pool connection's info dict)."""
DEFAULT_LOCK_TIMEOUT_S = 30.0
WAL_SIZE_LIMIT = 64 * 1024 * 1024
"""Bytes a SQLite -wal file is cut back to once a checkpoint has emptied it (PRAGMA journal_size_limit): a reader
transaction left open stops checkpoints, so the file grows with every write meanwhile, and SQLite would otherwise
keep it at its largest size for as long as any process has the database open. Also the size at which a commit
checkpoints (PRAGMA wal_autocheckpoint, in pages): at SQLite's 1,000 pages (~4 MB) nearly every batch copied the
pages it wrote into the database file and synced both files, so a page rewritten by every batch (an hour's bucket,
a join table's newest leaf) was copied each time; at 64 MiB it is copied once for all the batches since the last
checkpoint (replay in batches of 300: bytes written 364 -> 281 MB, fdatasync calls 179 -> 17)."""
WRITE_CACHE_MB = 16
"""MiB of SQLite page cache a write transaction's connection gets (PRAGMA cache_size; config
`storage.sqlite_cache_mb`): a 30,000-event replay batch touches thousands of join-table and bucket pages, which the
default 2 MB cache (~480 pages) evicts and reads back (-wal index lookups, pread) and spills to the -wal mid-batch
(1.07 M-event replay: pread 482 k -> 323 k, pwrite 1.26 M -> 0.98 M). Reads keep the connection's default, and a
connection goes back to it when returned to the pool, so only a connection inside a write transaction holds the
larger cache (issue 18; docs/PERFORMANCE.md, the page-cache round)."""
CACHE_KIB = "driftline_cache_kib"
"""Key of a SQLite connection's cache_size as last set (negative: KiB) in the pool connection's info dict."""
READ_CACHE_KIB = "driftline_read_cache_kib"
"""Key of a SQLite connection's own default cache_size (read at connect) in the pool connection's info dict."""


def checkpoint_pages(page_size: int) -> int:
    """PRAGMA wal_autocheckpoint for a database of `page_size`-byte pages: a checkpoint once the -wal holds
    WAL_SIZE_LIMIT bytes of frames (read at each connect, so a test may lower it)."""
    return max(1, int(WAL_SIZE_LIMIT) // max(1, int(page_size)))


def install_sqlite(engine: Engine, lock_timeout_s: float, write_cache_mb: int = WRITE_CACHE_MB) -> None:
    """Pragmas (WAL, its size limit and checkpoint size, busy timeout = the lock timeout, a `write_cache_mb` page
    cache in write transactions only) and explicit BEGIN / BEGIN IMMEDIATE on every connection."""

    def connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # pysqlite must not BEGIN on its own (after our reads)
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute(f"PRAGMA journal_size_limit={int(WAL_SIZE_LIMIT)}")
        page_size = cur.execute("PRAGMA page_size").fetchone()[0]
        cur.execute(f"PRAGMA wal_autocheckpoint={checkpoint_pages(page_size)}")
        cur.execute(f"PRAGMA busy_timeout={int(lock_timeout_s * 1000)}")
        default_kib = cur.execute("PRAGMA cache_size").fetchone()[0]
        cur.close()
        _record.info[BUSY_MS] = int(lock_timeout_s * 1000)
        _record.info[CACHE_KIB] = _record.info[READ_CACHE_KIB] = default_kib

    def begin(conn: Connection) -> None:
        options = conn.get_execution_options()
        write = bool(options.get(WRITE))
        wait = options.get(WAIT, lock_timeout_s) if write else lock_timeout_s
        if conn.info.get(BUSY_MS) != int(wait * 1000):  # the pooled connection keeps the pragma: a heartbeat's
            conn.exec_driver_sql(f"PRAGMA busy_timeout={int(wait * 1000)}")  # 0.1 s must not stay for the next
            conn.info[BUSY_MS] = int(wait * 1000)  # transaction, a read included (BUSY during WAL recovery)
        cache_kib = -int(write_cache_mb) * 1024 if write else conn.info.get(READ_CACHE_KIB)
        if cache_kib is not None and conn.info.get(CACHE_KIB) != cache_kib:  # a pragma only when it changes
            conn.exec_driver_sql(f"PRAGMA cache_size={int(cache_kib)}")
            conn.info[CACHE_KIB] = cache_kib
        calls.next_step(conn, calls.LOCK_STEP if write else "BEGIN", wait)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    def checkin(dbapi_conn: Any, record: Any) -> None:
        """A connection back in the pool drops to its default cache (the pages past it are freed): an idle pooled
        connection of `run` or `serve` never keeps a write transaction's cache."""
        read_kib = record.info.get(READ_CACHE_KIB)
        if dbapi_conn is not None and read_kib is not None and record.info.get(CACHE_KIB) != read_kib:
            with suppress(sqlite3.Error):  # a broken connection: the next read's begin sets it (or it is discarded)
                dbapi_conn.execute(f"PRAGMA cache_size={int(read_kib)}")
                record.info[CACHE_KIB] = read_kib

    event.listen(engine, "connect", connect)
    event.listen(engine, "begin", begin)
    event.listen(engine, "checkin", checkin)


def lock_postgres(conn: Connection, lock_timeout_s: float) -> None:
    """Take the write lock in the connection's transaction (released at commit or rollback); a lock not
    obtained within the timeout raises the driver's OperationalError (lock_not_available). One statement: the
    transaction's lock_timeout is set by the subquery, which PostgreSQL evaluates before the lock it bounds (a
    volatile function keeps the subquery from being merged into the outer query), a round trip fewer per write
    transaction than SET LOCAL then the lock."""
    calls.next_step(conn, calls.LOCK_STEP, lock_timeout_s)
    conn.execute(text("SELECT pg_advisory_xact_lock(:k) FROM (SELECT set_config('lock_timeout', :t, true)) AS s"),
                 {"k": WRITE_LOCK_KEY, "t": f"{max(1, int(lock_timeout_s * 1000))}ms"})  # 0 would be no limit


def bound_read(conn: Connection, lock_timeout_s: float) -> None:
    """A PostgreSQL read transaction waits at most the lock timeout for a table lock (reads take no driftline lock,
    but an ACCESS EXCLUSIVE lock of another session, e.g. VACUUM FULL, blocks them; the driver's OperationalError
    lock_not_available then)."""
    conn.execute(text(f"SET LOCAL lock_timeout = '{max(1, int(lock_timeout_s * 1000))}ms'"))


def gave_up_waiting(err: BaseException) -> bool:
    """True when a driver error says a lock was not obtained in time (SQLite busy/locked, PostgreSQL 55P03)."""
    orig = getattr(err, "orig", err)
    if getattr(orig, "sqlstate", None) == "55P03":
        return True
    msg = str(orig).lower()
    return "database is locked" in msg or "database is busy" in msg or "lock timeout" in msg


def cancelled(err: BaseException) -> bool:
    """True when a driver error says the statement was cancelled (PostgreSQL 57014: a stop broke off a wait for the
    write lock, calls.DbCalls.break_lock_waits)."""
    return getattr(getattr(err, "orig", err), "sqlstate", None) == "57014"
