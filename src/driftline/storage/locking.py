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
keep it at its largest size for as long as any process has the database open."""


def install_sqlite(engine: Engine, lock_timeout_s: float) -> None:
    """Pragmas (WAL and its size limit, busy timeout = the lock timeout) and explicit BEGIN / BEGIN IMMEDIATE on every connection."""

    def connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # pysqlite must not BEGIN on its own (after our reads)
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute(f"PRAGMA journal_size_limit={int(WAL_SIZE_LIMIT)}")
        cur.execute(f"PRAGMA busy_timeout={int(lock_timeout_s * 1000)}")
        cur.close()
        _record.info[BUSY_MS] = int(lock_timeout_s * 1000)

    def begin(conn: Connection) -> None:
        options = conn.get_execution_options()
        write = bool(options.get(WRITE))
        wait = options.get(WAIT, lock_timeout_s) if write else lock_timeout_s
        if conn.info.get(BUSY_MS) != int(wait * 1000):  # the pooled connection keeps the pragma: a heartbeat's
            conn.exec_driver_sql(f"PRAGMA busy_timeout={int(wait * 1000)}")  # 0.1 s must not stay for the next
            conn.info[BUSY_MS] = int(wait * 1000)  # transaction, a read included (BUSY during WAL recovery)
        calls.next_step(conn, calls.LOCK_STEP if write else "BEGIN", wait)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    event.listen(engine, "connect", connect)
    event.listen(engine, "begin", begin)


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
