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


def test_locks_released_together_share_one_wait() -> None:
    """SRE tryout: a stop against a database that stopped answering waited 5 s for the jobs lock's unlock, then 5 s
    more for the evaluation lock's (12 s in all). release_all starts every unlock first and waits for all of them
    within one `wait_s` (an injected clock: the waits asked for are checked, no time passes)."""
    from driftline.service.leader import release_all

    now = [100.0]
    asked: list[tuple[str, float]] = []

    class Unanswered:
        def __init__(self, role: str) -> None:
            self.role = role

        def wait(self, timeout: float | None = None) -> bool:
            asked.append((self.role, float(timeout or 0.0)))
            now[0] += timeout or 0.0  # the unlock is not answered within the wait
            return False

    class Lock:
        def __init__(self, role: str, held: bool = True) -> None:
            self.role, self.held, self.begun = role, held, False

        def begin_release(self) -> Unanswered | None:
            self.begun = True
            return Unanswered(self.role) if self.held else None

    locks = [Lock("jobs"), Lock("evaluate"), Lock("export", held=False)]
    release_all(locks, 5.0, monotonic=lambda: now[0])
    assert all(lock.begun for lock in locks)  # every unlock started before any wait
    assert asked == [("jobs", 5.0), ("evaluate", 0.0)] and now[0] == 105.0


def test_a_service_stop_releases_its_locks_in_one_shared_wait(monkeypatch, tmp_path) -> None:
    """Service.stop gives up the jobs, evaluation and export locks with one release_all call."""
    from driftline.config import Config
    from driftline.service import process

    calls: list[list[str]] = []
    monkeypatch.setattr(process, "release_all", lambda locks, *a, **k: calls.append([lock.role for lock in locks]))
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    store.migrate()
    service = process.Service(Config(), store, port=0, jobs=True)
    try:
        service.start()
    finally:
        service.stop()
        store.close()
    assert calls == [["jobs", "evaluate", "export"]]
