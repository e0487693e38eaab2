"""A stop of `run` while its batch waits behind another driftline writer's write lock (PostgreSQL advisory lock)
breaks the wait off at once (on-call tryout: SIGTERM waited out the rest of the lock slice, up to 10 s, 6.9 s here
with the test config's 6.7 s slice). The other writer is a real one (a Store write transaction of this process,
holding the lock); `run` is a real subprocess against tansu. Asserted on events only: the process exits while the
other writer still holds the lock, its wait was cancelled (never timed out: no 'held by another writer for Ns'),
and nothing is lost or stored twice: the positions match the state, and a restart stores every record once."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from driftline.storage.store import Store
from kafka_fixtures import create_topics, unique_name
from kafka_service_support import StoreProbe, consistency, make_events, produce, start_service, wait_until, \
    write_config
from pg_fixtures import _require_pg, admin_url, create_database, drop_database



@pytest.fixture
def stoplock_db() -> Iterator[tuple[str, str]]:
    """(database name, SQLAlchemy URL) of a fresh database driftline_stoplock_<hex>, dropped after the test."""
    _require_pg()
    name = f"driftline_stoplock_{uuid.uuid4().hex[:12]}"
    create_database(name)
    try:
        yield name, admin_url().rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://") + "/" + name
    finally:
        drop_database(name)


def _waiting_on_the_lock(name: str) -> int:
    """Sessions of the database waiting for an advisory lock (the driftline write lock)."""
    with psycopg.connect(admin_url(), autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND wait_event = 'advisory'",
                           (name,)).fetchone()
    return int(row[0]) if row else 0


@pytest.mark.kafka
@pytest.mark.slow
def test_a_stop_cancels_the_wait_behind_another_writers_lock(kafka_bootstrap: str, tmp_path: Path,
                                                             stoplock_db: tuple[str, str]) -> None:
    name, url = stoplock_db
    topics = {"predictions": unique_name("stopp"), "outcomes": unique_name("stopo")}
    create_topics(kafka_bootstrap, topics.values(), 2)
    events = make_events(tmp_path, days=1.0, per_day=3000)
    half = len(events.records) // 2
    produce(kafka_bootstrap, topics, events.records[:half])
    svc = start_service(tmp_path, write_config(tmp_path, topics, unique_name("g"), batch=2000), url, kafka_bootstrap)
    probe = StoreProbe(url, topics)
    other = Store(url)
    held, release = threading.Event(), threading.Event()

    def hold_the_lock() -> None:
        with other.write():  # a driftline write transaction: it holds the write lock until released
            held.set()
            release.wait()

    holder = threading.Thread(target=hold_the_lock, daemon=True)
    try:
        wait_until(lambda: probe.total() == half, 90, "the first half stored", procs=(svc,))
        holder.start()
        assert held.wait(30)
        produce(kafka_bootstrap, topics, events.records[half:])
        wait_until(lambda: _waiting_on_the_lock(name), 60, "run's batch waiting for the write lock", procs=(svc,))
        svc.proc.terminate()
        assert svc.proc.wait(timeout=60) == 0, svc.log()
        assert not release.is_set() and holder.is_alive()  # exited while the other writer still holds the lock
        log = svc.log()
        assert "held by another writer for" not in log, log  # its wait never ran out: the stop broke it off
        assert "stopping: cancelling a wait for the database write lock" in log, log
        assert _waiting_on_the_lock(name) == 0  # nothing of it left waiting on the server either
    finally:
        release.set()
        holder.join(timeout=30) if holder.is_alive() else None
        svc.kill()
        other.close()
    stored = probe.total()
    assert consistency(url, topics) == (stored, stored) and stored == half  # the batch waiting wrote nothing
    again = start_service(tmp_path, write_config(tmp_path, topics, unique_name("g"), batch=2000, name="again.yaml"),
                          url, kafka_bootstrap, name="again")
    try:
        wait_until(lambda: probe.total() == len(events.records), 90, "every record stored", procs=(again,))
        assert again.terminate() == 0
    finally:
        again.kill()
        probe.close()
    assert consistency(url, topics) == (len(events.records), len(events.records))


def test_a_cancelled_lock_wait_is_lock_wait_cancelled_and_writes_nothing(stoplock_db: tuple[str, str]) -> None:
    """Two Stores (two writers) on one database: the second waits behind the first's write lock until
    break_lock_waits (what a stop of `run` calls) cancels it: LockWaitCancelled, nothing written, the first
    still holding the lock, and the second's connection usable again once the lock is free."""
    from driftline.storage.errors import LockWaitCancelled

    name, url = stoplock_db
    first, second = Store(url), Store(url, lock_timeout_s=60.0)
    first.migrate()
    outcome: list[BaseException | None] = []

    def write() -> None:
        try:
            with second.write() as conn:
                conn.exec_driver_sql("INSERT INTO meta (key, value) VALUES ('stoptest', 'written')")
            outcome.append(None)
        except BaseException as err:  # noqa: BLE001 - the outcome is asserted below
            outcome.append(err)

    try:
        with first.write():
            waiter = threading.Thread(target=write, daemon=True)
            waiter.start()
            wait_until(lambda: _waiting_on_the_lock(name), 30, "the second writer waiting for the lock")

            def cancelled() -> list[BaseException | None]:
                second.calls.break_lock_waits()  # what a stop of `run` does every 0.5 s (storage/calls.py)
                return outcome

            wait_until(cancelled, 30, "the wait cancelled")
            waiter.join(timeout=30)
            assert not waiter.is_alive() and len(outcome) == 1 and isinstance(outcome[0], LockWaitCancelled)
            assert "cancelled" in str(outcome[0])
        assert first.meta_prefixed("stoptest") == {}  # nothing of the cancelled transaction
        with second.write() as conn:
            conn.exec_driver_sql("INSERT INTO meta (key, value) VALUES ('stoptest', 'later')")
        assert first.meta_prefixed("stoptest") == {"stoptest": "later"}
    finally:
        first.close()
        second.close()
