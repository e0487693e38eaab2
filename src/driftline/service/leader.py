"""The lock that elects which replica runs scheduled work: a PostgreSQL advisory lock, or on SQLite a flock on a
sidecar file next to the database (file_lock); always held on an in-memory database (no other process sees it)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Protocol

from sqlalchemy import Connection, text

from ..storage.store import Store
from .file_lock import FileLock, sqlite_database_path
from ..streak import FailureStreak, first_line

log = logging.getLogger(__name__)

LOCK_KEY = 0x6472_6966_746C
"""PostgreSQL advisory lock key held by the replica that evaluates triggers ('driftl')."""
EXPORT_LOCK_KEY = LOCK_KEY + 2
"""Advisory lock of the replica that exports the series read from the database (LOCK_KEY + 1 is the jobs' lock).
Separate from evaluation, so a `--no-evaluate` replica can export and an evaluating one need not."""
ROLES = {LOCK_KEY: "evaluate", LOCK_KEY + 1: "jobs", EXPORT_LOCK_KEY: "export"}
"""What each lock elects: the name of its SQLite sidecar file, `<db>.leader-<role>` (other keys: the key)."""
UNLOCK_WAIT_S = 5.0
"""How long a clean stop waits for the database to answer the unlock of a held PostgreSQL lock."""


def sidecar_path(database: str, key: int) -> str:
    """The file whose flock stands for the advisory lock `key` of the SQLite database at `database`."""
    return f"{database}.leader-{ROLES.get(key, str(key))}"


class LeaderLock:
    """Session advisory lock on PostgreSQL (held until the connection closes); on SQLite an exclusive flock on
    `<db>.leader-<role>` (held until released or the process exits); always held on an in-memory SQLite database."""

    def __init__(self, store: Store, key: int = LOCK_KEY, failures: FailureStreak | None = None) -> None:
        self.store, self.key = store, key
        self.failures = failures if failures is not None else FailureStreak("leader lock check", log)
        """Logs a database outage's failed checks once, then every few minutes (a process shares one among its locks)."""
        self._conn: Connection | None = None
        self._held = False
        self._mutex = threading.RLock()  # the scheduler (evaluation) and scrapes (what to export) both ask
        database = sqlite_database_path(store.url) if store.dialect == "sqlite" else None
        self._file = FileLock(sidecar_path(database, key)) if database is not None else None

    def held(self) -> bool:
        """Acquire or confirm the lock; False when another replica holds it or the database is unreachable."""
        with self._mutex:
            if self.store.dialect == "postgresql":
                return self._check()
            return self._file.held() if self._file is not None else True

    def _check(self) -> bool:
        self.store.calls.begin("leader-lock check")  # a scrape asks: /readyz must see it stall, not wait for it
        ok = False
        try:
            was_held = self._held
            try:
                held = self._query()
            except Exception as err:  # noqa: BLE001 - a session the server ended: one try on a new connection
                if self._conn is None or not getattr(err, "connection_invalidated", False):
                    raise
                self._discard()
                held = self._query()
                now = ("taken again on a new connection" if held else "another session holds it now (another "
                       "replica, or the ended one still exiting)") if was_held else "checked again on a new connection"
                log.warning("%s lock: its database session was ended by the server (%s); %s", self.role,
                            first_line(err), now)
            ok = True
            self.failures.succeeded()
            return held
        except Exception as err:  # noqa: BLE001 - connection lost: the lock is gone with it
            self.failures.failed(err)
            self._discard()
            return False
        finally:
            self.store.calls.end(ok)

    def _query(self) -> bool:
        """Confirm the lock on its connection, or try to take it (connecting first where there is none)."""
        if self._conn is None:
            self._conn = self.store.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            self._held = False
        if self._held:
            self._conn.execute(text("SELECT 1"))
        else:
            self._held = bool(self._conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": self.key}).scalar())
        return self._held

    def release(self, wait_s: float = UNLOCK_WAIT_S) -> None:
        """Give the lock up: unlocked explicitly (closing the connection alone frees it only once the server's
        backend has noticed and exited, so another replica asking right after could still be refused), then the
        connection is discarded, not returned to the pool (which would keep it). The unlock waits at most `wait_s`
        for a database that stopped answering (a stopped proxy, `kill -STOP`: TCP still acknowledges, so no
        timeout ends the statement; `serve` hung in its clean stop for good): it is then left to finish in a
        thread of its own, and the lock goes with the session when the process exits."""
        release_all([self], wait_s)

    def begin_release(self) -> threading.Event | None:
        """Start giving the lock up (see `release`): the event set once the unlock has answered, None when there
        was nothing to unlock."""
        with self._mutex:
            if self._file is not None:
                self._file.release()
            conn, held = self._conn, self._held
            self._conn, self._held = None, False
            if conn is None:
                return None
            if not held:
                _discard(conn)
                return None
            done = threading.Event()

            def unlock() -> None:
                try:
                    conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": self.key})
                except Exception as err:  # noqa: BLE001 - connection lost: the lock went with it
                    log.debug("leader lock unlock failed: %s", err)
                finally:
                    _discard(conn)
                    done.set()

            threading.Thread(target=unlock, name=f"leader-unlock-{self.role}", daemon=True).start()
            return done

    @property
    def role(self) -> str:
        """What the lock elects (evaluate, jobs, export), for log lines."""
        return ROLES.get(self.key, str(self.key))

    def _discard(self) -> None:
        if self._conn is not None:
            _discard(self._conn)
        self._conn, self._held = None, False


def _discard(conn: Connection) -> None:
    """Close a lock connection for good (invalidated: never back into the pool, which would keep its lock)."""
    try:
        conn.invalidate()
        conn.close()
    except Exception:  # noqa: BLE001 - closing a broken connection
        pass


class _Done(Protocol):
    def wait(self, timeout: float | None = None) -> bool: ...


class _Releasable(Protocol):
    @property
    def role(self) -> str: ...

    def begin_release(self) -> _Done | None: ...


def release_all(locks: Iterable[_Releasable], wait_s: float = UNLOCK_WAIT_S,
                monotonic: Callable[[], float] = time.monotonic) -> None:
    """Give several locks up at once within one shared wait of `wait_s` (SRE tryout: a stop against a database that
    stopped answering waited out 5 s for the jobs lock, then 5 s more for the evaluation lock)."""
    started = [(lock, lock.begin_release()) for lock in locks]
    deadline = monotonic() + wait_s
    for lock, done in started:
        if done is not None and not done.wait(max(0.0, deadline - monotonic())):
            log.warning("%s lock not released: the database has not answered the unlock for %gs (the lock ends "
                        "with this process's session)", lock.role, wait_s)
