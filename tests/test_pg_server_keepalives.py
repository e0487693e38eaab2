"""The server side of every driftline PostgreSQL session probes its client (storage/pgsession.py): SRE tryout, a
`run` killed while the network to the server was cut left sessions holding the write lock and the leader locks
until the server's default 2 h keepalive ended them, and its replacement waited all that time."""

from __future__ import annotations

import psycopg
from sqlalchemy import text

from driftline.storage.store import Store

SETTINGS = ("tcp_keepalives_idle", "tcp_keepalives_interval", "tcp_keepalives_count", "tcp_user_timeout")


def _shown(store: Store) -> dict[str, str]:
    with store.read() as conn:
        return {name: conn.execute(text(f"SHOW {name}")).scalar_one() for name in SETTINGS}


def test_sessions_probe_their_client_within_seconds(pg_database) -> None:
    store = Store(pg_database.url)
    try:
        store.migrate()
        assert _shown(store) == {"tcp_keepalives_idle": "10", "tcp_keepalives_interval": "5",
                                 "tcp_keepalives_count": "3", "tcp_user_timeout": "30000"}  # ms
    finally:
        store.close()


def test_an_administrators_keepalive_setting_is_kept(pg_database) -> None:
    with psycopg.connect(pg_database.libpq_url, autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{pg_database.name}" SET tcp_keepalives_idle = 77')
    store = Store(pg_database.url)
    try:
        shown = _shown(store)
        assert shown["tcp_keepalives_idle"] == "77" and shown["tcp_keepalives_count"] == "3", shown
    finally:
        store.close()
