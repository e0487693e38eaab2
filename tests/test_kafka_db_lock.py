"""The database answers but another writer holds its write lock (fourth SRE tryout, two `driftline run` on one
database): the consumer logged "database reachable again" as soon as a read succeeded, while it still could not
write. Reads never wait for the write lock (SQLite WAL, PostgreSQL reads take no lock), so only a write says the
database can be written again. SQLite file and PostgreSQL (advisory write lock), against the in-memory
kafka-python stand-in with topic ids."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from driftline.kafka.consumer import LiveConsumer
from driftline.storage.locking import WRITE_LOCK_KEY
from driftline.storage.store import Store
from kafka_service_support import make_events
from test_kafka_log_ids import _consumer
from test_kafka_loop import Clock, partitioned, total


@contextmanager
def _write_lock_held(url: str) -> Iterator[None]:
    """Another writer holding the database write lock (SQLite: a write transaction; PostgreSQL: the lock key)."""
    if url.startswith("sqlite"):
        conn = sqlite3.connect(url.split("///", 1)[1], isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            conn.execute("ROLLBACK")
            conn.close()
        return
    import psycopg

    with psycopg.connect(url.replace("postgresql+psycopg", "postgresql"), autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (WRITE_LOCK_KEY,))
        yield
        conn.execute("SELECT pg_advisory_unlock(%s)", (WRITE_LOCK_KEY,))


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: Any, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'live.db'}"
    return request.getfixturevalue("pg_url")


def _steps(lc: LiveConsumer, clock: Clock, n: int) -> None:
    for _ in range(n):
        lc.step()
        clock.t += 1.1


def _live(db_url: str, tmp_path: Path, days: float) -> tuple[Any, Store, Clock, Any, LiveConsumer, Any]:
    """Events, a migrated store whose writes wait 0.2 s for the lock, the fake clock, the partitioned logs, and a
    consumer of them with its kafka-python stand-in (topic ids p and o)."""
    events = make_events(tmp_path, days=days, per_day=1500)
    store = Store(db_url, lock_timeout_s=0.2)
    store.migrate()
    clock = Clock()
    logs = partitioned(events.records)
    lc, fake = _consumer(store, logs, clock, {"p": "id-p", "o": "id-o"})
    return events, store, clock, logs, lc, fake


def _lines(caplog: Any, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if text in r.getMessage()]


def test_a_write_lock_held_by_another_writer_is_not_reported_as_the_database_back(
        db_url: str, tmp_path: Path, caplog: Any) -> None:
    """While the lock is held: positioning (it stores each partition's topic id) and a held batch wait for it,
    the log and /readyz say so, and nothing says the database is back although reads succeed. Once released,
    one 'database writable again' and every record is stored; a member whose partitions need no write (already
    positioned, a revoked batch) checks with a write of its own before saying so."""
    caplog.set_level("INFO", logger="driftline")
    events, store, clock, logs, lc, fake = _live(db_url, tmp_path, days=0.3)
    lc.lock_patience_s = 3.0  # reported once waited for 3 s in all (30 s in service)
    with _write_lock_held(db_url):
        fake.rebalance(set(logs))
        _steps(lc, clock, 12)
        assert total(store) == 0 and lc.pending
        assert _lines(caplog, "write lock is held by another writer")
        assert _lines(caplog, "storing the topic id of its log (first start) for ")  # not "(offset reset or …)"
        assert not _lines(caplog, "reachable again") and not _lines(caplog, "writable again")
        ok, why = lc.ready()
        assert not ok and "write lock is held by another writer" in why
    _steps(lc, clock, 40)
    assert total(store) == len(events.records) and lc.ready()[0]
    assert len(_lines(caplog, "database writable again")) == 1 and not _lines(caplog, "reachable again")

    caplog.clear()  # a batch held on the lock, its partitions revoked and assigned again (positioned by reads)
    fake.logs = logs = partitioned(events.records + events.records[:40])
    with _write_lock_held(db_url):
        _steps(lc, clock, 3)
        assert lc.held is not None
        fake.rebalance(set())
        _steps(lc, clock, 2)
        assert lc.held is None and not lc.owned
        fake.rebalance(set(logs))
        _steps(lc, clock, 6)
        assert not lc.pending and lc.held is not None
        assert not _lines(caplog, "reachable again") and not _lines(caplog, "writable again")
        assert not lc.ready()[0]
    _steps(lc, clock, 10)
    assert lc.ready()[0] and len(_lines(caplog, "database writable again")) == 1
    assert total(store) == len(events.records) + 40

    caplog.clear()  # a batch held on the lock, then every partition revoked: nothing left that would write
    fake.logs = logs = partitioned(events.records + events.records[:80])
    with _write_lock_held(db_url):
        _steps(lc, clock, 3)
        assert lc.held is not None
        fake.rebalance(set())
        _steps(lc, clock, 4)
        assert lc.held is None and not lc.owned and not lc.ready()[0]
    _steps(lc, clock, 4)  # an empty write transaction says so
    assert lc.ready()[0] and len(_lines(caplog, "database writable again")) == 1
    assert not _lines(caplog, "reachable again")


def test_a_lock_held_for_less_than_the_patience_is_waited_for_in_slices_and_not_reported(
        db_url: str, tmp_path: Path, caplog: Any) -> None:
    """Fifth SRE tryout: one write waiting 30 s for the lock stopped the loop from polling (the group evicted the
    member, the stall watch restarted the client). Each write now waits one slice (the store's lock timeout,
    KafkaSettings.lock_wait_s in service); the held batch is tried again at the next step, with no backoff, and
    the lock is neither logged as a warning nor made /readyz fail before it was waited for lock_patience_s."""
    caplog.set_level("INFO", logger="driftline")
    events, store, clock, logs, lc, fake = _live(db_url, tmp_path, days=0.2)
    fake.rebalance(set(logs))
    _steps(lc, clock, 3)  # positioned (topic ids stored)
    stored_before = total(store)
    fake.logs = partitioned(events.records + events.records[:30])
    with _write_lock_held(db_url):
        for _ in range(8):  # 8 steps of 1.1 s: the lock held for ~9 s of the consumer's clock
            lc.step()
            clock.t += 1.1
            assert lc.ready()[0]
            if lc.held is not None:
                assert lc.db_retry_at <= clock.t  # the next step tries again: the wait itself was the pause
        assert lc.held is not None and total(store) == stored_before
    assert _lines(caplog, "still waiting")
    assert not [r for r in caplog.records if r.levelname == "WARNING" and "lock" in r.getMessage()]
    _steps(lc, clock, 10)
    assert total(store) == len(events.records) + 30 and lc.held is None
    assert not [r for r in caplog.records if r.levelname == "WARNING" and "again" in r.getMessage()]


def test_run_waits_for_the_lock_a_third_of_the_poll_interval_at_most_30s() -> None:
    from driftline.kafka.settings import KafkaSettings

    def wait(**options: Any) -> float:
        return KafkaSettings(bootstrap="127.0.0.1:9", options=options).lock_wait_s

    assert wait() == 10.0 and wait(max_poll_interval_ms=15_000) == 5.0 and wait(max_poll_interval_ms=300_000) == 30.0


def test_the_service_store_waits_one_slice(monkeypatch: Any, tmp_path: Path) -> None:
    import threading

    from driftline.config import from_dict
    from driftline.kafka.settings import KafkaSettings
    from driftline.service import live

    made: list[Store] = []

    class Recorded(Store):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(live, "Store", Recorded)
    monkeypatch.setattr(live, "migrate_with_retry", lambda store, stop, on_wait, on_first: False)  # stop after the store
    settings = KafkaSettings(bootstrap="127.0.0.1:9", options={"max_poll_interval_ms": 12_000})
    live.run_service(from_dict({}), f"sqlite:///{tmp_path / 'x.db'}", settings, threading.Event(), port=0)
    assert [s.lock_timeout_s for s in made] == [4.0]


def test_no_lock_wait_while_the_member_rejoins_its_group(db_url: str, tmp_path: Path, monkeypatch: Any) -> None:
    """Fifth SRE tryout, again: a member whose group rebalanced during a lock hold spent each loop in a lock wait
    with ~0.5 s of polling between, never finished rejoining and, 91 s on, the stall watch restarted its Kafka
    client. While kafka-python reports the member rebalancing, neither the held batch nor the writability check
    waits for the lock; both resume once it is back in the group."""
    events, store, clock, logs, lc, fake = _live(db_url, tmp_path, days=0.2)
    fake.rebalance(set(logs))
    _steps(lc, clock, 3)
    tries = {"batch": 0, "check": 0}
    process, check = lc.pipeline.process_batch, store.check_writable

    def counted_batch(*args: Any, **kwargs: Any) -> Any:
        tries["batch"] += 1
        return process(*args, **kwargs)

    def counted_check() -> None:
        tries["check"] += 1
        check()

    monkeypatch.setattr(lc.pipeline, "process_batch", counted_batch)
    monkeypatch.setattr(store, "check_writable", counted_check)
    fake.logs = partitioned(events.records + events.records[:30])
    with _write_lock_held(db_url):
        _steps(lc, clock, 2)
        assert lc.held is not None
        fake._coordinator.state = "<rebalancing>"
        before = dict(tries)
        _steps(lc, clock, 5)
        assert tries == before  # five steps, no lock wait
        fake.rebalance(set())  # the rebalance revokes everything: no batch left, only the writability check
        _steps(lc, clock, 3)
        assert lc.held is None and tries["check"] == before["check"]
    fake._coordinator.state = "<stable>"
    fake.rebalance(set(logs))
    _steps(lc, clock, 10)
    assert tries["check"] > before["check"] or tries["batch"] > before["batch"]
    assert total(store) == len(events.records) + 30 and lc.ready()[0]


def test_lag_of_an_owned_partition_paused_by_a_held_batch_follows_the_log_end(
        db_url: str, tmp_path: Path, monkeypatch: Any) -> None:
    """Fifth SRE tryout: during a lock hold the owned partitions are paused, kafka-python's high-water marks (from
    fetches) stop moving, and they replaced the log ends asked from the broker: lag stood still while events came
    in (420 for 51 s; 524 against a true ~1,000). The larger of the two is used."""
    events, store, clock, logs, lc, fake = _live(db_url, tmp_path, days=0.2)
    fake.rebalance(set(logs))
    _steps(lc, clock, 6)
    assert lc.status.lag == 0
    frozen = {tp: len(log) for tp, log in fake.logs.items()}
    monkeypatch.setattr(fake, "highwater", lambda tp: frozen[tp])  # no fetch of a paused partition
    fake.logs = partitioned(events.records + events.records[:200])
    with _write_lock_held(db_url):
        _steps(lc, clock, 8)  # > 5 s of the consumer's clock: the log ends were asked again
        assert lc.held is not None
        assert lc.status.lag == sum(len(v) for v in fake.logs.values()) - sum(frozen.values()) == 200


def test_housekeeping_runs_after_every_lock_wait(db_url: str, tmp_path: Path, monkeypatch: Any) -> None:
    """Fourth tryout of the lock slices: the step decided whether housekeeping (lag, group status, stall watch) was
    due with the clock read before its batch waited 10 s for the lock, so it ran after every other wait (lag moved
    every ~20 s). The clock is read again after the batch."""
    events, store, clock, logs, lc, fake = _live(db_url, tmp_path, days=0.2)
    fake.rebalance(set(logs))
    _steps(lc, clock, 3)
    process = lc.pipeline.process_batch

    def slow(*args: Any, **kwargs: Any) -> Any:  # each write waits a 10 s slice of the consumer's clock
        clock.t += 10.0
        return process(*args, **kwargs)

    monkeypatch.setattr(lc.pipeline, "process_batch", slow)
    runs: list[float] = []
    housekeeping = lc._housekeeping

    def counted() -> None:
        runs.append(clock.t)
        housekeeping()

    monkeypatch.setattr(lc, "_housekeeping", counted)
    fake.logs = partitioned(events.records + events.records[:30])
    with _write_lock_held(db_url):
        for _ in range(6):
            lc.step()  # no clock step between: only the lock waits move it
        assert lc.held is not None
    assert len(runs) == 6


def test_housekeeping_does_nothing_once_stopping() -> None:
    """SRE tryout: SIGTERM to `run` behind a stopped PostgreSQL proxy: after the held batch failed, housekeeping's
    lag refresh read the stored positions and waited out a connect timeout (10 s) before the consumer closed. Once
    stopping, housekeeping (lag, positions passed, heartbeat, maintenance, dead-letter copies) is skipped: nothing
    of it is needed by the next start."""
    import threading

    from driftline.kafka.upkeep import Upkeep

    def clock() -> float:
        raise AssertionError("housekeeping ran while stopping")

    upkeep = Upkeep()
    upkeep.stop, upkeep.monotonic = threading.Event(), clock
    upkeep.stop.set()
    upkeep._housekeeping()
