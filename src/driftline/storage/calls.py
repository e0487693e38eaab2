"""Database calls in flight, published for /readyz and the stall warning without touching the database.

A connection whose peer stops answering without resetting it (a network partition, a stopped proxy) blocks the
calling thread in the driver; anything that asked the database whether it is there blocked as well (the SRE
tryout: /readyz and /metrics hung for minutes while /healthz said ok and nothing was logged). Every Store
transaction records here what it is waiting for (connecting, a statement, the commit) and since when, and when a
call last succeeded; readers only look at this state. A step that legitimately waits (the write lock, up to the
lock timeout) carries that wait as its grace.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Engine, event

log = logging.getLogger("driftline.storage")

LOCK_STEP = "the write lock"
"""The step of a write transaction waiting for the database write lock (locking.py), its first statement."""

LOCK_WAITED_S = 0.2
"""A stop cancels a wait for the write lock that has lasted this long: one behind another writer, not a lock taken
uncontended that is in flight as the stop looks (the final writes of a clean stop)."""

DEFAULT_STALL_S = 30.0
"""A database call waiting this long (beyond its grace) is reported: /readyz 503 and one warning."""


@dataclass
class Call:
    """One thread's database call: what it waits for, since when (monotonic) and the wait it may legitimately take."""

    kind: str
    step: str
    since: float
    grace: float = 0.0
    started: float = 0.0
    conn: Any = None
    """The DBAPI connection being pinged at checkout (psycopg): the one call that can safely be broken off."""
    waiting_on: Any = None
    """The DBAPI connection its statement, commit or rollback waits on: broken off only once the process is stopping
    (a rollback too: a transaction whose body raised while the database froze waited for its ROLLBACK for good)."""
    warned: int = 0
    """The level its stall was logged at (0: not yet): a warning for the first stalled call, INFO while another
    stalled call is still waiting (a long stall logs one warning, not one per retried read)."""

    def overdue(self, now: float) -> float:
        """Seconds the current step has waited beyond its grace."""
        return now - self.since - self.grace


@dataclass
class DbCalls:
    """Thread-safe registry of the database calls in flight and of the last call that succeeded."""

    monotonic: Callable[[], float] = time.monotonic
    last_ok: float | None = None
    _calls: dict[int, list[Call]] = field(default_factory=dict)
    """Per thread, its calls innermost last (a leader-lock check inside a transaction must not end the transaction's)."""
    _failed: dict[int, float] = field(default_factory=dict)
    """Per thread whose last call failed, when that call began (an outage starts there, not when it gave up)."""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def begin(self, kind: str) -> None:
        """A transaction of this thread starts (`kind`: "read" or "write"): it waits for a connection first."""
        now = self.monotonic()
        with self._lock:
            self._calls.setdefault(threading.get_ident(), []).append(Call(kind, "a connection", now, started=now))

    def step(self, step: str, grace: float = 0.0, dbapi_conn: Any = None) -> None:
        """The thread's call now waits for `step` (a statement, the write lock, the commit) on `dbapi_conn`."""
        with self._lock:
            call = self._current()
            if call is not None:
                call.step, call.since, call.grace, call.waiting_on = step, self.monotonic(), grace, dbapi_conn

    def idle(self) -> None:
        """The database answered; the thread computes (no database wait until its next step)."""
        self.step("")

    def end(self, ok: bool) -> None:
        """The thread's transaction is over (`ok`: committed or read without a connection error)."""
        now = self.monotonic()
        with self._lock:
            stack = self._calls.get(threading.get_ident(), [])
            call = stack.pop() if stack else None
            if not stack:
                self._calls.pop(threading.get_ident(), None)
            if ok:
                self.last_ok = now
                self._failed.pop(threading.get_ident(), None)
            elif call is not None:  # the outermost call ends last: its (earliest) start is kept
                self._failed[threading.get_ident()] = call.started
        if call is not None and call.warned:
            if ok:
                log.log(call.warned, "database answered again: a %s waited %.0fs", call.kind, now - call.started)
            else:
                log.log(call.warned, "stalled database %s failed after %.0fs", call.kind, now - call.started)

    def failed_for(self) -> float:
        """Seconds since the calling thread's last call began when that call failed (0 after a success): a call
        that stalled 41 s before failing started the outage 41 s before its failure was known."""
        with self._lock:
            started = self._failed.get(threading.get_ident())
        return 0.0 if started is None else max(0.0, self.monotonic() - started)

    def _current(self) -> Call | None:
        """The calling thread's innermost call (under the lock)."""
        stack = self._calls.get(threading.get_ident())
        return stack[-1] if stack else None

    def _all(self) -> list[Call]:
        """Every call in flight (under the lock)."""
        return [c for stack in self._calls.values() for c in stack]

    def pinging(self, dbapi_conn: Any) -> None:
        """The pool pings a pooled connection before handing it out (None: the ping is over)."""
        with self._lock:
            call = self._current()
            if call is not None:
                call.conn = dbapi_conn

    def break_stalled_pings(self, stall_s: float) -> None:
        """Shut down the socket of every pre-ping unanswered for longer than `stall_s`: a `SELECT 1` that long is
        a dead peer (a stopped proxy acknowledges bytes, so TCP timeouts never fire). The driver then raises, the
        pool tries a fresh connection (bounded by connect_timeout) and the caller takes the outage path."""
        now = self.monotonic()
        with self._lock:
            stuck = [c for c in self._all() if c.conn is not None and c.overdue(now) > stall_s]
            conns = [c.conn for c in stuck]
            for call in stuck:
                call.conn = None
        for conn in conns:
            log.warning("database not answering: closing a pooled connection whose ping has waited more than %.0fs",
                        stall_s)
            shut_down(conn)

    def break_stalled_at_stop(self, limit_s: float) -> None:
        """The process is stopping: shut down the connection of every ping, statement or commit unanswered for
        longer than `limit_s` (beyond its grace). Its transaction is abandoned as a kill would abandon it: a batch
        is stored only with its positions (one transaction), so it is read again by the next start; a commit cut
        off either happened or not, and the stored positions say which. A wait for the write lock (PostgreSQL) is
        cancelled at once (`break_lock_waits`)."""
        self.break_lock_waits()
        now = self.monotonic()
        with self._lock:
            stuck = [c for c in self._all()  # psycopg's: a SQLite call waits on a file, not on a peer
                     if hasattr(c.conn or c.waiting_on, "pgconn") and c.overdue(now) > limit_s]
            conns = [(c.conn or c.waiting_on, self.describe(c)) for c in stuck]
            for call in stuck:
                call.conn = call.waiting_on = None
        for conn, what in conns:
            log.warning("stopping: closing a database connection that has not answered for more than %gs (%s)",
                        limit_s, what)
            shut_down(conn)

    def break_lock_waits(self) -> None:
        """The process is stopping: cancel every PostgreSQL wait for the write lock that has lasted LOCK_WAITED_S
        (the server ends it with query_canceled, the connection stays usable). Its transaction has written nothing: the lock is its first
        statement, and a cancel that comes once the lock is granted ends a later statement of the same transaction,
        which is rolled back whole (a batch and its positions are one transaction: read again by the next start).
        A stop of `run` behind another writer's lock waited out its lock slice (up to 10 s)."""
        now = self.monotonic()
        with self._lock:
            waits = [c for c in self._all() if c.step == LOCK_STEP and hasattr(c.waiting_on, "pgconn")
                     and now - c.since > LOCK_WAITED_S]
            conns = [(c.waiting_on, self.describe(c)) for c in waits]
            for call in waits:
                call.waiting_on = None  # once: the cancel ends the wait
        for conn, what in conns:
            log.info("stopping: cancelling a wait for the database write lock, held by another writer (%s); "
                     "nothing of its transaction was written", what)
            cancel(conn)

    def stalled(self, stall_s: float) -> Call | None:
        """The call whose current step has waited longest beyond its grace, when that exceeds `stall_s`."""
        now = self.monotonic()
        with self._lock:
            waiting = [c for c in self._all() if c.step and c.overdue(now) > stall_s]
        return max(waiting, key=lambda c: c.overdue(now), default=None)

    def describe(self, call: Call) -> str:
        """One line naming a stalled call, e.g. 'a write has been waiting 45s for a statement'."""
        return f"a {call.kind} has been waiting {self.monotonic() - call.since:.0f}s for {call.step}"

    def warn_stalled(self, stall_s: float) -> None:
        """Log a warning once per call that has stalled (its end is logged by end())."""
        now = self.monotonic()
        with self._lock:
            new = [c for c in self._all() if c.step and not c.warned and c.overdue(now) > stall_s]
            level = logging.INFO if any(c.warned == logging.WARNING for c in self._all()) else logging.WARNING
            for call in new:
                call.warned, level = level, logging.INFO
        for call in new:
            log.log(call.warned, "database not answering: %s (a network partition or a stopped proxy?); still "
                    "waiting", self.describe(call))


def next_step(conn: Connection, step: str, grace: float) -> None:
    """Name the connection's next statement's wait (e.g. the write lock, allowed up to the lock timeout)."""
    conn.info["driftline_step"], conn.info["driftline_grace"] = step, grace


CALLS_KEY = "driftline_calls"
"""Where a pooled connection's info holds its engine's DbCalls (for driver calls made outside SQLAlchemy's execute)."""


@contextmanager
def driver_step(conn: Connection, step: str) -> Iterator[None]:
    """A driver call made on the DBAPI connection directly (COPY), which fires no cursor event: recorded like a
    statement, so it is reported when it stalls and broken off once stopping (verification tryout: SIGTERM to `run`
    hung until the backends got SIGCONT, a batch's COPY waiting on a stopped backend unseen by both)."""
    registry = conn.info.get(CALLS_KEY)
    if registry is None:
        yield
        return
    registry.step(step, 0.0, _dbapi(conn))
    try:
        yield
    finally:
        registry.idle()


def install(engine: Engine, calls: DbCalls) -> None:
    """Record every statement and commit of `engine`'s connections as a step of the calling thread's call."""

    def before(conn, cursor, statement, parameters, context, executemany) -> None:  # type: ignore[no-untyped-def]
        calls.step(conn.info.pop("driftline_step", "a statement"), conn.info.pop("driftline_grace", 0.0),
                   getattr(cursor, "connection", None))

    def after(conn, cursor, statement, parameters, context, executemany) -> None:  # type: ignore[no-untyped-def]
        calls.idle()

    if engine.dialect.name == "postgresql":
        ping = engine.dialect.do_ping

        def do_ping(dbapi_conn: Any) -> bool:  # the pool's pre-ping has no event: wrap the dialect's
            calls.pinging(dbapi_conn)
            try:
                return ping(dbapi_conn)
            finally:
                calls.pinging(None)

        engine.dialect.do_ping = do_ping  # type: ignore[method-assign]
    event.listen(engine, "connect", lambda dbapi_conn, record: record.info.__setitem__(CALLS_KEY, calls))
    event.listen(engine, "before_cursor_execute", before)
    event.listen(engine, "after_cursor_execute", after)
    event.listen(engine, "commit", lambda conn: calls.step("the commit", 0.0, _dbapi(conn)))
    event.listen(engine, "rollback", lambda conn: calls.step("the rollback", 0.0, _dbapi(conn)))  # breakable at stop


def _dbapi(conn: Connection) -> Any:
    """The DBAPI connection under a SQLAlchemy Connection (None when it has none)."""
    try:
        return conn.connection.dbapi_connection
    except Exception:  # noqa: BLE001 - invalidated or closed: nothing to break off
        return None


def cancel(dbapi_conn: Any) -> None:
    """Cancel a psycopg connection's running statement from another thread (its thread raises QueryCanceled)."""
    try:
        dbapi_conn.cancel_safe(timeout=STOP_WAIT_S)
    except Exception as err:  # noqa: BLE001 - the statement ended meanwhile, or the server is away
        log.debug("cannot cancel a wait for the write lock: %s", err)


def shut_down(dbapi_conn: Any) -> None:
    """Shut down a psycopg connection's socket from another thread: the thread blocked on it sees EOF and raises."""
    try:
        if dbapi_conn.closed:  # the ping ended meanwhile: its descriptor may belong to another socket by now
            return
        fd = dbapi_conn.pgconn.socket
        sock = socket.socket(fileno=os.dup(fd))
    except Exception as err:  # noqa: BLE001 - already closed, or not psycopg
        log.debug("cannot shut down a stalled connection: %s", err)
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError as err:
        log.debug("cannot shut down a stalled connection: %s", err)
    finally:
        sock.close()


STOP_WAIT_S = 2.0
"""Once the process is stopping, a database call unanswered this long is broken off: a stop must not wait
kafka.database_stall for a ping, nor for ever for a statement, that a dead peer never answers (SRE tryout: SIGTERM
to `run` behind a proxy stopped with kill -STOP took 45 s with a batch's checkout ping stalled, and never ended
with its statement stalled, until kill -9)."""


def break_calls_when_stopped(calls: DbCalls, stop: threading.Event, done: threading.Event,
                             limit_s: float = STOP_WAIT_S, every_s: float = 0.5) -> None:
    """Until `done`: once `stop` is set, break off every database call unanswered for longer than `limit_s` (a
    thread of `run`); its caller then takes the outage path (a new connection is bounded by connect_timeout)."""
    while not done.is_set():
        if stop.is_set():
            calls.break_stalled_at_stop(limit_s)
        done.wait(every_s)


class StallWatch:
    """A daemon thread warning once about each database call stalled for longer than `stall_s`."""

    def __init__(self, calls: DbCalls, stall_s: float = DEFAULT_STALL_S, every_s: float = 1.0) -> None:
        self.calls, self.stall_s, self.every_s = calls, stall_s, every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="driftline-db-stall-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.calls.warn_stalled(self.stall_s)
            self.calls.break_stalled_pings(self.stall_s)
