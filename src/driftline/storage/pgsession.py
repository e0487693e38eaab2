"""Session settings of every PostgreSQL connection driftline opens (a connect hook: nothing global).

Bucket and feature-sample blobs (~3 KB each) are compressed by the server whenever their row passes its TOAST
threshold, and a batch rewrites every bucket it touches, so pglz, PostgreSQL's default, was most of the server's
time in the bucket writes (260 stored buckets upserted: 17.5 ms of server CPU with pglz, 6.0 ms with lz4). lz4
(PostgreSQL 14 on, when the server was built with it) does the same at a fraction of the cost; the values stored,
and read back, are the same bytes. A database or role whose administrator chose `default_toast_compression`, or a
column given a COMPRESSION of its own, keeps that choice.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, event

from .calls import CALLS_KEY
from .pgconnect import DEFAULTS

LZ4 = ("SELECT set_config('default_toast_compression', 'lz4', false) FROM pg_settings "
       "WHERE name = 'default_toast_compression' AND source = 'default' AND 'lz4' = ANY(enumvals)")
"""lz4 for this session's new compressed values, only where the server knows it (no row before PostgreSQL 14 or in a
build without lz4: nothing set) and nobody configured the setting (source 'default')."""


_SERVER_SIDE = ("tcp_keepalives_idle", "tcp_keepalives_interval", "tcp_keepalives_count", "tcp_user_timeout")
SERVER_KEEPALIVES = ("SELECT set_config(s.name, s.value, false) FROM (VALUES "
                     + ", ".join(f"('{name}', '{DEFAULTS[name.replace('tcp_keepalives_', 'keepalives_')]}')"
                                 for name in _SERVER_SIDE)
                     + ") AS s(name, value) JOIN pg_settings p ON p.name = s.name WHERE p.source = 'default'")
"""The server's side of the connection probes its client with the client's own values (pgconnect.DEFAULTS):
a `run` killed while the network between it and the server was cut left its sessions on the server, one `idle in
transaction` holding the write lock and two holding the leader locks, until the server's own keepalive (2 h by
default) ended them, and every replacement waited that long (SRE tryout). Now the server drops such a session
within ~25 s, releasing its locks. Only settings nobody configured (source 'default'); tcp_user_timeout from
PostgreSQL 12 on (no row before: nothing set); all four are ignored on a Unix-domain socket."""


def configure(dbapi_conn: Any, record_info: dict[Any, Any] | None = None) -> None:
    """Apply the session settings to a new psycopg connection (its own short transaction, committed). Recorded as
    a step waiting on that connection in the caller's database call (the pool record's registry, when there is
    one): unlike the connect itself (connect_timeout) this query has no bound, so a peer that stops answering right
    after the handshake is reported and broken off at a stop like any statement."""
    registry = (record_info or {}).get(CALLS_KEY)
    if registry is not None:
        registry.step("a connection's session settings", 0.0, dbapi_conn)
    try:
        with dbapi_conn.cursor() as cur:
            cur.execute(LZ4)
            cur.execute(SERVER_KEEPALIVES)
        dbapi_conn.commit()
    finally:
        if registry is not None:
            registry.step("a connection")  # the checkout goes on; the next statement records its own step


def install(engine: Engine) -> None:
    """Configure every connection `engine` opens (after calls.install, whose hook puts the registry in the record)."""
    event.listen(engine, "connect", lambda dbapi_conn, record: configure(dbapi_conn, record.info))
