"""A table lock taken outside driftline (a DBA's VACUUM FULL, ALTER TABLE, LOCK TABLE) must not hold a read for good.

SRE tryout: an ACCESS EXCLUSIVE lock on `positions` held for 60 s blocked the consumer's lag-refresh read (reads took
no lock timeout), so its loop did not poll within max_poll_interval, the member was evicted and /readyz said
"database ok" meanwhile. A PostgreSQL read transaction now waits at most the store's lock timeout, then raises
StoreUnavailable naming the cause (the lag refresh skips a round; the loop goes on)."""

from __future__ import annotations

import threading
from typing import Any

import psycopg

from driftline.storage.errors import StoreUnavailable
from driftline.storage.store import Store


def test_a_read_behind_another_sessions_table_lock_gives_up_at_the_lock_timeout(pg_url: str) -> None:
    Store(pg_url).migrate()
    store = Store(pg_url, lock_timeout_s=0.5)
    got: list[Any] = []

    def read() -> None:
        try:
            got.append(store.positions("kafka:p"))
        except StoreUnavailable as err:
            got.append(err)

    with psycopg.connect(pg_url.replace("postgresql+psycopg", "postgresql")) as dba:
        dba.execute("LOCK TABLE positions IN ACCESS EXCLUSIVE MODE")  # held until this transaction ends
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(60.0)  # a hang guard: without a lock timeout the read waits for as long as the lock is held
        assert not reader.is_alive(), "the read waited for the table lock"
        dba.rollback()
    assert isinstance(got[0], StoreUnavailable) and "table lock" in str(got[0]) and "0.5s" in str(got[0])
    assert store.positions("kafka:p") == {}  # the lock gone: reads work again
    store.close()


def test_reads_still_wait_for_a_lock_released_within_the_timeout(pg_url: str) -> None:
    Store(pg_url).migrate()
    store = Store(pg_url, lock_timeout_s=30.0)
    with psycopg.connect(pg_url.replace("postgresql+psycopg", "postgresql")) as dba:
        dba.execute("LOCK TABLE positions IN ACCESS EXCLUSIVE MODE")
        timer = threading.Timer(0.5, dba.rollback)
        timer.start()
        try:
            assert store.positions("kafka:p") == {}
        finally:
            timer.join()
    store.close()

