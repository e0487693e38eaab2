"""libpq connection parameters that turn a silent network partition into a connection error within tens of seconds.

Without them a PostgreSQL connection whose peer vanished without a reset waits for the kernel's retransmission
limit (about 15 minutes) before the driver raises; with TCP keepalives, `tcp_user_timeout` and `connect_timeout`
the call fails with OperationalError and takes the outage path (batch held, retries, "reachable again"). A
parameter the database URL already sets (`?keepalives_idle=60`) is left as the user chose it.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import make_url

DEFAULTS: dict[str, int] = {
    "connect_timeout": 10,  # seconds for a new connection (psycopg enforces it client-side)
    "keepalives": 1,
    "keepalives_idle": 10,  # seconds idle before the first probe
    "keepalives_interval": 5,
    "keepalives_count": 3,
    "tcp_user_timeout": 30000,  # ms that sent data may stay unacknowledged
}


APPLICATION_NAME = "driftline"
"""application_name of driftline's sessions where the URL sets none: pg_stat_activity, and the write-lock holder that
/readyz names (lock_holder.py), then tell a driftline writer from another client (on-call tryout)."""


def libpq_supports_user_timeout() -> bool:
    """tcp_user_timeout exists from libpq 12 on (an older libpq rejects the unknown parameter)."""
    try:
        from psycopg import pq
    except ImportError:
        return False
    return pq.version() >= 120000


def timeout_args(url: str) -> dict[str, Any]:
    """The defaults above that the URL's query does not set itself (connect_args would override the URL's)."""
    given = set(make_url(url).query)
    args = {k: v for k, v in DEFAULTS.items() if k not in given}
    if not libpq_supports_user_timeout():
        args.pop("tcp_user_timeout", None)
    return args


def session_args(url: str) -> dict[str, Any]:
    """timeout_args plus application_name, each only where the URL's query does not set it."""
    named = {} if "application_name" in make_url(url).query else {"application_name": APPLICATION_NAME}
    return {**timeout_args(url), **named}
