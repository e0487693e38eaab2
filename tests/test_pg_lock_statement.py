"""The PostgreSQL write lock is taken by one statement that also sets the transaction's lock_timeout
(storage/locking.py): the timeout is in force while the lock is waited for and for the rest of the transaction."""

from __future__ import annotations

import psycopg
import pytest
from sqlalchemy import text

from driftline.storage import locking
from driftline.storage.errors import WriteLocked
from driftline.storage.store import Store


def test_the_wait_bounds_the_transaction(pg_url) -> None:
    store = Store(pg_url)
    with store.write(wait_s=0.25) as conn:
        assert conn.execute(text("SHOW lock_timeout")).scalar_one() == "250ms"
    with store.read() as conn:  # transaction-local: gone with the transaction (reads set their own bound)
        assert conn.execute(text("SHOW lock_timeout")).scalar_one() == f"{int(store.lock_timeout_s)}s"
    store.close()


def test_a_held_lock_is_waited_for_only_the_timeout(pg_database) -> None:
    store = Store(pg_database.url)
    with psycopg.connect(pg_database.libpq_url) as other:
        other.execute("SELECT pg_advisory_xact_lock(%s)", [locking.WRITE_LOCK_KEY])
        with pytest.raises(WriteLocked):
            with store.write(wait_s=0.2):
                pass
        other.rollback()
    with store.write(wait_s=0.2):  # free again
        pass
    store.close()
