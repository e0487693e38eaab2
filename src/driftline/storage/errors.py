"""What the store raises to its callers: the database is away, or a batch's positions were moved by another
consumer (both are handled by the ingestion loops: hold and retry, or re-read the positions)."""

from __future__ import annotations

from typing import Any


class StoreUnavailable(RuntimeError):
    """The database cannot be reached or written; the caller keeps its batch and retries."""

    stored: Any = None
    """What the batches before it stored, when a replay was cut short by it (a BatchResult; replay --json)."""


class WriteLocked(StoreUnavailable):
    """The database answers, but another writer held its write lock for longer than the lock timeout: reads
    still work (they never wait for it), writes do not until it is released."""


class SessionLost(StoreUnavailable):
    """The server ended this process's database session mid-transaction (pg_terminate_backend, an idle-session
    timeout, a dropped connection): nothing was written; the database itself may be fine, and a retry on a new
    connection tells whether it is (on-call tryout: each terminated session logged "unavailable" then "reachable
    again" and flapped /readyz to 503 for half a second while the retry stored the batch)."""


class LockWaitCancelled(WriteLocked):
    """A wait for the write lock, behind another writer, cancelled because the process is stopping (PostgreSQL:
    storage.calls.DbCalls.break_lock_waits); nothing of the transaction was written."""


class SchemaMissing(StoreUnavailable):
    """The database answers but its driftline tables are gone (dropped and recreated empty under a running process):
    an outage to `run`, which holds its batch, until a restart migrates it; a scrape answers 503 naming it."""


class NotADatabase(RuntimeError):
    """The SQLite URL names a directory or a file that is not a SQLite database, or the PostgreSQL URL a database or
    role the server does not have: a wrong path or name, which no wait or retry mends (it was 'database
    unavailable' and `serve` retried it forever, or an unexpected DatabaseError)."""


class SchemaTooNew(RuntimeError):
    """The database records schema revisions this driftline does not know: a newer version migrated it (a
    downgrade, or an old replica left running in a rolling upgrade). Refused before anything is read or written;
    no retry mends it (Alembic's own error was `unexpected CommandError: Can't locate revision …`)."""


class MigrationFailed(RuntimeError):
    """The database refused a statement of a migration script (a column already there, a table changed by hand):
    nothing was migrated (one transaction) and no retry mends it. It was `database unavailable` (exit 3) and
    `run`/`serve` retried it forever (upgrade tryout)."""


class StalePositions(RuntimeError):
    """A guarded batch started where the stored position no longer is: another consumer moved it (the batch is
    rolled back; the caller drops it and re-reads the stored positions)."""

    def __init__(self, stale: dict[tuple[str, int], tuple[int, int | None]]) -> None:
        self.stale = stale
        """(source, partition) → (expected start offset, stored next offset or None when no row)."""
        parts = ", ".join(f"{s}[{p}] expected {e}, stored {a}" for (s, p), (e, a) in sorted(stale.items()))
        super().__init__(f"stale batch rejected: {parts}")
