"""Maintenance ceilings shared by the live consumers (storage/ceilings.py): every maintenance — `serve`'s job, another
`run` member's — caps its watermark at the lowest fresh ceiling recorded; stale rows are ignored and cleaned up; the
consumer's heartbeat (kafka/upkeep.py `_beat`). The real broker is in test_kafka_serve_maintenance.py."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from driftline.config import from_dict
from driftline.core.events import iso
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.kafka.alignment import IDLE_S
from driftline.kafka.upkeep import Upkeep
from driftline.service.scheduler import Jobs
from driftline.storage import ceilings
from driftline.storage.errors import StoreUnavailable
from driftline.storage.store import Store
from helpers import pred

DAY = 86400.0
T0 = 1_767_225_600.0
NOW = T0 + 100 * DAY


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    url = f"sqlite:///{tmp_path / 'c.db'}" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    s = Store(url, clock=lambda: NOW)
    s.migrate()
    yield s
    s.close()


def test_lowest_takes_fresh_rows_only() -> None:
    rows = {"ceiling:a": ceilings.encode(T0 + 5, NOW - 5), "ceiling:b": ceilings.encode(T0 + 1, NOW - 121),
            "ceiling:c": ceilings.encode(-math.inf, NOW + 500), "ceiling:d": "garbage",
            "ceiling:e": ceilings.encode(T0 + 3, NOW + 60)}
    assert ceilings.lowest(rows, NOW) == T0 + 3  # b too old, c too far ahead (clock skew), d unreadable
    assert ceilings.lowest(rows, NOW, exclude="e") == T0 + 5
    assert ceilings.lowest({"ceiling:x": ceilings.encode(-math.inf, NOW)}, NOW) == -math.inf
    assert ceilings.lowest({}, NOW) is None
    assert ceilings.decode(ceilings.encode(-math.inf, NOW)) == (-math.inf, NOW)
    assert ceilings.decode("nan 1.0") is None and ceilings.decode("1.0 inf") is None


def test_serve_maintenance_waits_for_a_fresh_ceiling_of_a_live_consumer(store: Store) -> None:
    """A prediction 1.4 d older than the newest event stored, horizon 1 d, implicit negatives after 12 h: while a
    `run` member records its slowest partition at 0.4 d, `serve`'s maintenance (no ceiling of its own) neither
    expires nor matures it; once that row is stale (the member died) or dropped, it does."""
    config = from_dict({"labels": {"horizon": "1d", "policy": "implicit_negative_after",
                                   "implicit_negative_after": "12h"}})
    clock = {"now": NOW}
    pipe = Pipeline(config, store, clock=lambda: clock["now"])
    pipe.process_batch([RawRecord("kafka:p", 0, 0, pred("a", 0.9, T0), "prediction"),
                        RawRecord("kafka:p", 1, 0, pred("b", 0.9, T0 + 1.4 * DAY), "prediction")])
    ceilings.record(store, "m1", T0 + 0.4 * DAY, NOW)
    ceilings.record(store, "m2", T0 + 2 * DAY, NOW)
    assert not pipe.maintain()
    assert not pipe.maintain(ceiling=math.inf, member="m2")  # another member's row counts, its own does not
    ceilings.record(store, "m1", -math.inf, NOW)  # m1 not read yet: no maintenance at all
    assert not pipe.maintain()
    jobs = Jobs(store, config, lambda: clock["now"])
    assert jobs.maintain().detail == {"counts": {}, "held_back_to": "a partition not read yet"}  # serve's job: why
    ceilings.record(store, "m1", T0 + 0.4 * DAY, NOW)
    assert jobs.maintain().detail["held_back_to"] == iso(T0 + 0.4 * DAY)
    jobs.close()
    clock["now"] = NOW + ceilings.FRESH_S + 1  # m1 (and m2) not heard from: ignored
    assert pipe.maintain()[("implicit_negatives", "")] == 1


def test_a_member_drops_its_row_and_cleans_up_stale_ones(store: Store) -> None:
    ceilings.record(store, "dead", T0, NOW - ceilings.FRESH_S - 1)
    ceilings.record(store, "live", T0 + 1, NOW - 5)
    store.set_meta("ceiling:junk", "not a ceiling")
    ceilings.record(store, "me", T0 + 2, NOW)
    assert set(store.meta_prefixed(ceilings.PREFIX)) == {"ceiling:live", "ceiling:me"}
    ceilings.record(store, "me", T0 + 3, NOW + 1)  # one row per member
    assert ceilings.shared(store, NOW) == T0 + 1
    ceilings.drop(store, "live")
    assert ceilings.shared(store, NOW + 1) == T0 + 3 and ceilings.shared(store, NOW + 1, exclude="me") is None


class _Member(Upkeep):
    """The state `Upkeep._beat` reads: partitions expected/pending, the alignment's ceiling."""

    def __init__(self, store: Store, floor: float) -> None:
        self.pipeline = Pipeline(from_dict({}), store, clock=lambda: NOW)
        self.member, self.next_beat, self.beat_stored, self.beat_owned = "m", 0.0, False, set()
        self.pending_since = None
        self.owned, self.expected, self.pending = set(), {}, set()
        self.floor = floor

    def _maintenance_ceiling(self) -> float:  # type: ignore[override]
        return self.floor


def test_the_consumer_records_its_ceiling_and_drops_it_when_it_holds_nothing_back(store: Store) -> None:
    m = _Member(store, T0 + 7)
    m._beat(0.0)  # nothing owned: no row
    assert not store.meta_prefixed(ceilings.PREFIX) and m.next_beat == ceilings.HEARTBEAT_S
    m.owned, m.pending = {"tp"}, {"tp"}  # assigned, being positioned: its events are unknown yet
    m._beat(1.0)
    assert ceilings.shared(store, NOW) == -math.inf
    m._beat(1.0 + IDLE_S)
    assert ceilings.shared(store, NOW) == -math.inf
    m._beat(2.0 + IDLE_S)  # positioning for longer than IDLE_S (broker or database away): it holds nobody back
    assert ceilings.shared(store, NOW) is None
    m.pending = set()
    m._beat(4.0 + IDLE_S)
    assert m.pending_since is None
    m.pending = {"tp"}
    m._beat(5.0 + IDLE_S)  # pending again (a recheck): -inf again
    assert ceilings.shared(store, NOW) == -math.inf
    m.pending, m.expected = set(), {"tp": 0}
    m._beat(40.0)
    assert ceilings.shared(store, NOW) == T0 + 7
    m.floor = math.inf  # every partition at its log end
    m._beat(50.0)
    assert ceilings.shared(store, NOW) is None and not m.beat_stored
    m.floor = T0 + 9
    m._beat(60.0)
    m._drop_beat()  # a clean stop
    assert not store.meta_prefixed(ceilings.PREFIX)


def test_a_heartbeat_never_waits_for_a_write_lock_another_writer_holds(store: Store) -> None:
    """The heartbeat runs in the consumer's main loop: behind another writer's transaction it must give up at once
    (and retry a second later), or the lag refresh and health stall with it (the reset-loss service test read a lag
    stuck for 30 s lock waits). The store here waits an hour for the lock: a heartbeat that used it is still
    waiting when the other writer lets go a minute later (a hang guard, not a speed check)."""
    import threading

    from test_kafka_db_lock import _write_lock_held

    patient = Store(store.url, clock=lambda: NOW, lock_timeout_s=3600.0)
    try:
        m = _Member(patient, T0 + 7)
        m.pending, m.expected = set(), {"tp": 0}
        with _write_lock_held(patient.url):
            beat = threading.Thread(target=m._beat, args=(40.0,), daemon=True)
            beat.start()
            beat.join(60.0)
            assert not beat.is_alive(), "the heartbeat waited for the write lock"
            assert not m.beat_stored and m.next_beat == 41.0  # not written; tried again at the next housekeeping
        m._beat(41.0)
        assert m.beat_stored and ceilings.shared(patient, NOW) == T0 + 7 and m.next_beat == 41.0 + ceilings.HEARTBEAT_S
        if patient.dialect == "sqlite":  # the short wait does not stay on the pooled connection
            with patient.write() as conn:
                assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 3_600_000
    finally:
        patient.close()


def test_a_short_lock_wait_does_not_stay_on_the_pooled_sqlite_connection(tmp_path: Path) -> None:
    """Verification tryout: the heartbeat's 0.1 s busy_timeout was reset by the next write transaction only, so a
    read on that pooled connection (BUSY during WAL recovery after a kill -9) waited 0.1 s instead of the lock
    timeout."""
    store = Store(f"sqlite:///{tmp_path / 'b.db'}", lock_timeout_s=30.0)
    store.migrate()
    with store.write(ceilings.BEAT_WAIT_S) as conn:
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 100
    with store.read() as conn:
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30_000
    with store.write() as conn:
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30_000
    store.close()


class _Frozen:
    """A store whose write transactions never get an answer until released (a database frozen under a stop)."""

    def __init__(self) -> None:
        import threading

        self.release, self.waits = threading.Event(), []

    def write(self, wait_s: float | None = None) -> Any:
        self.waits.append(wait_s)
        self.release.wait()
        raise StoreUnavailable("connection timeout expired")


def test_a_clean_stop_abandons_a_ceiling_deletion_the_database_does_not_answer(caplog: pytest.LogCaptureFixture,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """SRE tryout: SIGTERM to `run` while PostgreSQL was frozen for it: the stop spent 20 s deleting this member's
    ceiling row (two tries, one per close(), each waiting out a 10 s connect timeout), 62 s in all against the 30 s
    promised. The deletion gets a short lock wait, is tried once and abandoned when the database does not answer:
    the row is ignored after FRESH_S anyway. (The join is a hang guard, not a speed check.)"""
    import logging
    import threading
    from types import SimpleNamespace

    frozen = _Frozen()
    monkeypatch.setattr(ceilings, "STOP_WAIT_S", 0.05)
    m = _Member.__new__(_Member)
    m.pipeline, m.member, m.beat_stored = SimpleNamespace(store=frozen), "m", True
    caplog.set_level(logging.INFO, logger="driftline.kafka.consumer")
    try:
        for _ in range(2):  # close() runs twice: run(), then run_service
            stop = threading.Thread(target=m._drop_beat, daemon=True)
            stop.start()
            stop.join(60.0)
            assert not stop.is_alive(), "the stop waited for a database that does not answer"
        assert frozen.waits == [0.025] and not m.beat_stored  # one try, with the short lock wait
        assert "maintenance ceiling row left behind (ignored after 120s): the database did not answer within " \
               "0.05s" in caplog.text
    finally:
        frozen.release.set()


def test_a_clean_stop_gives_up_the_ceiling_row_behind_another_writers_lock(store: Store,
                                                                          caplog: pytest.LogCaptureFixture) -> None:
    """Behind another writer's lock (PostgreSQL: the advisory lock under SET LOCAL lock_timeout) the deletion waits
    half of STOP_WAIT_S, not the store's lock timeout (an hour here: the join is a hang guard); the row stays, ignored
    after FRESH_S, and the next member deletes it."""
    import logging
    import threading

    from test_kafka_db_lock import _write_lock_held

    patient = Store(store.url, clock=lambda: NOW, lock_timeout_s=3600.0)
    caplog.set_level(logging.INFO, logger="driftline.kafka.consumer")
    try:
        m = _Member(patient, T0 + 7)
        m.expected = {"tp": 0}
        m._beat(40.0)
        assert m.beat_stored
        with _write_lock_held(patient.url):
            stop = threading.Thread(target=m._drop_beat, daemon=True)
            stop.start()
            stop.join(60.0)
            assert not stop.is_alive(), "the stop waited for the write lock"
        assert ceilings.shared(patient, NOW) == T0 + 7 and not m.beat_stored
        assert f"held the database write lock for more than {ceilings.STOP_WAIT_S / 2:g}s" in caplog.text
    finally:
        patient.close()
