"""Who holds driftline's write lock on PostgreSQL, named for the on-call engineer.

On-call tryout: with a second writer stuck idle in transaction holding the write lock (locking.WRITE_LOCK_KEY),
/readyz and the log said writes were waiting for "another writer" but not which session, so the engineer had to find
it in pg_locks by hand before `pg_terminate_backend`. The holder's pid, application_name, client address, state and
since when are read from pg_locks and pg_stat_activity (a bigint advisory key is stored as classid = its high 32
bits, objid = its low 32 bits, objsubid = 1). SQLite cannot tell which process holds its write lock: None there.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import text

from .locking import WRITE_LOCK_KEY

HOLDER_SQL = (
    "SELECT a.pid, coalesce(a.application_name, ''), host(a.client_addr), a.client_port, coalesce(a.state, ''), "
    "a.state_change, a.xact_start, now() FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
    "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND l.classid::int8 = :hi "
    "AND l.objid::int8 = :lo AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
    "AND l.pid <> pg_backend_pid() ORDER BY a.xact_start NULLS LAST LIMIT 1")
"""The session holding the write lock in this database (the longest-running one, should there be several)."""


@dataclass(frozen=True)
class LockHolder:
    """A PostgreSQL session holding the write lock, as pg_stat_activity shows it."""

    pid: int
    application_name: str
    client: str
    """`host:port`, "local socket" (a Unix-domain connection has no address), or "" when hidden from this role."""
    state: str
    state_since: datetime | None
    xact_since: datetime | None
    now: datetime
    """The server's clock when read: the ages below are the server's, not this host's."""

    def describe(self) -> str:
        """One clause for /readyz and the log: who, where from, doing what since when, and what ends it."""
        name = f"application_name '{self.application_name}'" if self.application_name else "no application_name"
        if not self.client and not self.state:  # pg_stat_activity hides another role's session from this one
            return (f"PostgreSQL session pid {self.pid} ({name}; its client and state are hidden from driftline's "
                    "role, which lacks pg_read_all_stats); if it is stuck, its own role or a superuser can end it with "
                    f"SELECT pg_terminate_backend({self.pid})")
        parts = [name, f"client {self.client}", f"{self.state or 'state unknown'}{_since(self.state_since, self.now)}"]
        if self.xact_since is not None and (self.state_since is None
                                            or (self.state_since - self.xact_since).total_seconds() >= 1):
            parts.append(f"transaction open{_since(self.xact_since, self.now)}")
        return (f"PostgreSQL session pid {self.pid} ({', '.join(parts)}); if it is stuck, end it with "
                f"SELECT pg_terminate_backend({self.pid})")


def _since(at: datetime | None, now: datetime) -> str:
    """' since 2026-01-01T00:00:00Z (42s)', or '' when unknown."""
    if at is None:
        return ""
    stamp = at.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f" since {stamp} ({max(0.0, (now - at).total_seconds()):.0f}s)"


def holder_of(row: Any) -> LockHolder:
    """HOLDER_SQL's row as a LockHolder (pure: tests feed rows)."""
    pid, app, host, port, state, state_change, xact_start, now = row
    if host is None and port is None and not state:  # another role's session, seen without pg_read_all_stats: NULL
        client = ""  # address, port and state (SRE tryout: it was named "client local socket, state unknown")
    else:
        client = "local socket" if host is None else f"{host}:{port}" if port not in (None, -1) else str(host)
    return LockHolder(int(pid), str(app), client, str(state), state_change, xact_start, now)


def write_lock_holder(store: Any) -> LockHolder | None:
    """The session holding the write lock now; None on SQLite, when nobody holds it, or when the read fails (the
    caller reports the wait without a name: a lookup must never turn a lock wait into an error)."""
    if getattr(store, "dialect", None) != "postgresql":
        return None
    try:
        with store.read() as conn:
            row = conn.execute(text(HOLDER_SQL), {"hi": WRITE_LOCK_KEY >> 32, "lo": WRITE_LOCK_KEY & 0xFFFFFFFF}
                               ).first()
    except Exception:  # noqa: BLE001 - any failure: report the wait without naming the holder
        return None
    return None if row is None else holder_of(row)
