"""Whether the live consumer can use its database, told truthfully: unreachable, reachable but its write lock held
by another writer (a second `driftline run`, a replay, maintenance), or writable. Reads never wait for the write
lock (SQLite WAL; PostgreSQL reads take no lock), so a read that succeeds ends only an outage that a read hit: a
failed write is over when a write succeeds (fourth SRE tryout: "database reachable again" was logged while the
process still could not write). A write waits for the lock one slice at a time (KafkaSettings.lock_wait_s) so the
loop keeps polling between slices; the lock is reported only once it has been waited for LOCK_PATIENCE_S in all
(fifth SRE tryout: one 30 s wait stopped polling, the group evicted the member and the stall watch blamed Kafka).
A mixin of LiveConsumer."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ..ingest.pipeline import Pipeline
from ..storage.errors import LockWaitCancelled, SessionLost, StoreUnavailable, WriteLocked
from ..storage.lock_holder import write_lock_holder
from ..storage.locking import DEFAULT_LOCK_TIMEOUT_S
from .health import Backoff, ConsumerStatus

log = logging.getLogger("driftline.kafka.consumer")

LOCK_PATIENCE_S = DEFAULT_LOCK_TIMEOUT_S
"""Waited this long in all for the write lock, the consumer reports it (warning, /readyz 503): another writer's
long transaction is no outage, one held for longer is (as a single write's lock timeout said before)."""


class DatabaseHealth:
    """Outage state of the database as the consumer met it; readiness reads `status.db_ok` / `status.db_error`."""

    pipeline: Pipeline
    status: ConsumerStatus
    monotonic: Callable[[], float]
    db_backoff: Backoff
    db_retry_at: float
    db_down_since: float | None
    db_failed: str
    """What failed last while down: "read", "write" or "locked" (a write that waited out the lock timeout)."""
    held: Any
    pending: set[Any]
    lock_patience_s: float
    session_lost_at: float | None = None
    """When the server ended a session under a call that is being retried at once (None: no such retry pending)."""

    def _db_down(self, err: Exception, what: str, write: bool = True) -> None:
        """A database call failed: retry after the backoff (at once after a lock wait: the wait was the pause),
        report not-ready, log the first failure (or a change between unreachable and locked) as a warning; a lock
        waited for less than lock_patience_s in all is logged at INFO only, and readiness stays as it was. A session
        the server ended (SessionLost: pg_terminate_backend) is one warning and a retry at once, readiness unchanged:
        only when that retry fails too is it an outage (down since the loss)."""
        if isinstance(err, LockWaitCancelled):  # stopping: no outage, nothing to report as one (storage.calls)
            log.info("stopping: %s: %s", err, what)
            return
        now = self.monotonic()
        if isinstance(err, SessionLost) and self.db_down_since is None and self.session_lost_at is None:
            self.session_lost_at, self.db_retry_at = now, now  # a retry on a new connection tells: no outage yet
            log.warning("database session ended by the server (%s): %s; retrying at once on a new connection",
                        err, what)
            return
        lost_at, self.session_lost_at = self.session_lost_at, None
        failed = "locked" if isinstance(err, WriteLocked) else "write" if write else "read"
        waited = self.pipeline.store.lock_timeout_s if failed == "locked" else 0.0
        changed = self.db_down_since is not None and (failed == "locked") != (self.db_failed == "locked")
        if self.db_down_since is None or changed:  # since the failed call (or the lock wait) began, not since it
            # gave up (SRE tryout: "reachable again after 37s" for a 78 s outage whose first write stalled 41 s)
            self.db_down_since = now - max(waited, self.pipeline.store.calls.failed_for())
            if lost_at is not None and not changed:  # the retry of a lost session failed: down since the loss
                self.db_down_since = min(self.db_down_since, lost_at)
        self.db_failed = failed
        if failed == "locked":
            self.db_retry_at = now
            held_for = now - self.db_down_since
            if held_for < self.lock_patience_s:
                log.info("database write lock held by another writer for %.0fs so far: %s; still waiting",
                         held_for, what)
                return
            self.db_backoff.next()  # counts the reports below
            level = logging.WARNING if self.status.db_ok or self.db_backoff.attempts % 5 == 0 else logging.INFO
            holder = write_lock_holder(self.pipeline.store)  # PostgreSQL: who, so the on-call can act on it
            named = "" if holder is None else f" (held by {holder.describe()})"
            self.status.db_ok = False
            self.status.db_error = ("database reachable, but its write lock is held by another writer"
                                    f"{named}: waiting for it, consuming paused")
            log.log(level, "database write lock is held by another writer (a second driftline run, a replay or "
                    "maintenance) for %.0fs%s: %s; waiting for it", held_for, named, what)
            return
        delay = self.db_backoff.next()
        self.db_retry_at = now + delay
        level = logging.WARNING if self.status.db_ok or changed or self.db_backoff.attempts % 5 == 0 \
            else logging.INFO
        self.status.db_ok = False
        self.status.db_error = (f"database unavailable ({str(err).splitlines()[0][:300]}): consuming paused"
                                + (", batch held" if self.held else ""))
        log.log(level, "database unavailable (%s): %s; retrying in %.1fs", err, what, delay)

    def write_failure(self) -> str | None:
        """Why this process's writes fail while the database may still answer reads (disk full, a read-only file or
        server), None when they do not: `driftline_database_up` is 0 meanwhile. Soak tryout: with the SQLite file's
        disk full every batch failed and /readyz was 503, but the read probe kept `driftline_database_up` at 1, so
        no database alert fired. A write lock held by another writer is not a failure (readiness reports it)."""
        if self.db_down_since is None or self.db_failed != "write":
            return None
        return self.status.db_error or "database unavailable: writes fail"

    def _db_read(self) -> None:
        """A read succeeded: the database answers. Ends an outage only where a read failed."""
        if self.db_down_since is None or self.db_failed == "read":
            self._db_clear()

    def _db_written(self) -> None:
        """A write transaction committed: the database can be written again."""
        self._db_clear()

    def _db_check_writable(self) -> None:
        """A failed write with nothing left to retry it (its batch revoked, the partitions positioned without a
        write): an empty write transaction tells whether the database can be written again (it waits up to the
        lock timeout, as a batch would)."""
        if self.db_down_since is None or self.db_failed == "read" or self.held is not None or self.pending:
            return
        if self.monotonic() < self.db_retry_at:
            return
        try:
            self.pipeline.store.check_writable()
        except StoreUnavailable as err:
            self._db_down(err, "checking that the database can be written again")
            return
        self._db_written()

    def _db_clear(self) -> None:
        """The call that failed works again: say what is true now (after the lock: writable again; after a failed
        write: reachable again, a write committed; after a failed read: reachable again), reset the backoff."""
        self.session_lost_at = None
        if self.db_down_since is not None:
            what, why = {"locked": ("writable", " (the other writer released its write lock)"),
                         "write": ("reachable", " (a write committed)")}.get(self.db_failed, ("reachable", ""))
            level = logging.INFO if self.status.db_ok else logging.WARNING  # said only where the outage was
            log.log(level, "database %s again after %.0fs%s", what, self.monotonic() - self.db_down_since, why)
            self.db_down_since = None
        self.db_failed = ""
        self.db_backoff.reset()
        self.db_retry_at = 0.0
        self.status.db_ok, self.status.db_error = True, ""
