"""A clean stop gives up a leader lock the database no longer answers for (SRE tryout).

Reproduction: `serve` on PostgreSQL, every PostgreSQL process stopped with `kill -STOP` (as a wedged proxy: TCP
still acknowledges, nothing answers), then SIGTERM: the scheduler shut down and the process hung for good in
LeaderLock.release's `SELECT pg_advisory_unlock` (py-bt; still there after minutes, until kill -9)."""

from __future__ import annotations

import threading

import pytest

from kafka_service_support import wait_until

from driftline.service.leader import LOCK_KEY, LeaderLock
from driftline.storage.store import Store

pytestmark = pytest.mark.postgres


def test_release_returns_while_the_database_does_not_answer_and_the_lock_is_freed_after(pg_behind_forwarder
                                                                                        ) -> None:
    pg = pg_behind_forwarder
    store, other_store = Store(pg.url), Store(pg.url)
    lock, other = LeaderLock(store, LOCK_KEY + 1), LeaderLock(other_store, LOCK_KEY + 1)
    try:
        assert lock.held()
        pg.forwarder.pause()  # connections stay open; nothing is relayed
        released = threading.Event()
        stopper = threading.Thread(target=lambda: (lock.release(), released.set()), daemon=True)
        stopper.start()
        stopper.join(timeout=60)  # liveness (the unlock waits 5 s), not a speed assertion
        assert released.is_set(), "release() still waiting for a database that does not answer"
        pg.forwarder.resume()
        # the unlock left to its thread is answered now (or the session ends): another replica takes the lock
        wait_until(other.held, 60, "the lock free for another replica")
    finally:
        pg.forwarder.resume()
        other.release()
        lock.release()
        store.close()
        other_store.close()
