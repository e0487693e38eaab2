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

LZ4 = ("SELECT set_config('default_toast_compression', 'lz4', false) FROM pg_settings "
       "WHERE name = 'default_toast_compression' AND source = 'default' AND 'lz4' = ANY(enumvals)")
"""lz4 for this session's new compressed values, only where the server knows it (no row before PostgreSQL 14 or in a
build without lz4: nothing set) and nobody configured the setting (source 'default')."""


def configure(dbapi_conn: Any) -> None:
    """Apply the session settings to a new psycopg connection (its own short transaction, committed)."""
    with dbapi_conn.cursor() as cur:
        cur.execute(LZ4)
    dbapi_conn.commit()


def install(engine: Engine) -> None:
    """Configure every connection `engine` opens."""
    event.listen(engine, "connect", lambda dbapi_conn, _record: configure(dbapi_conn))
