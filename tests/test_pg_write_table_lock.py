"""A write that waits out its lock timeout behind another session's table lock says so, not "another driftline writer".

SRE tryout (PostgreSQL): `LOCK TABLE buckets IN ACCESS EXCLUSIVE MODE` held by a DBA's session made `replay` exit 3
after 31.8 s saying "another driftline writer held the database write lock", and `run` log "held by another writer":
the transaction's lock_timeout bounds every statement after driftline's advisory lock, and any lock timeout was
reported as that lock. Once driftline's lock is held, only another session's table lock can time a statement out."""

from __future__ import annotations

from typing import Any

import psycopg
from sqlalchemy import text

from driftline.storage import locking
from driftline.storage.errors import StoreUnavailable, WriteLocked
from driftline.storage.store import Store


def _write(store: Store) -> Any:
    """A write transaction touching the buckets table: its result, or the error it raised."""
    try:
        with store.write(wait_s=0.5) as conn:
            return conn.execute(text("SELECT count(*) FROM buckets")).scalar()
    except StoreUnavailable as err:
        return err


def test_a_write_behind_another_sessions_table_lock_names_the_table_lock(pg_url: str) -> None:
    Store(pg_url).migrate()
    store = Store(pg_url)
    with psycopg.connect(pg_url.replace("postgresql+psycopg", "postgresql")) as dba:
        dba.execute("LOCK TABLE buckets IN ACCESS EXCLUSIVE MODE")  # held until this transaction ends
        got = _write(store)
        dba.rollback()
    assert isinstance(got, StoreUnavailable) and not isinstance(got, WriteLocked), got
    assert "table lock another database session holds" in str(got) and "0.5s" in str(got)
    assert _write(store) == 0  # the lock gone: writes work again
    store.close()


def test_a_write_behind_another_writers_lock_still_says_write_lock(pg_url: str) -> None:
    Store(pg_url).migrate()
    store = Store(pg_url)
    with psycopg.connect(pg_url.replace("postgresql+psycopg", "postgresql")) as other:
        other.execute("SELECT pg_advisory_xact_lock(%s)", (locking.WRITE_LOCK_KEY,))
        got = _write(store)
        other.rollback()
    assert isinstance(got, WriteLocked) and "another driftline writer" in str(got), got
    store.close()

