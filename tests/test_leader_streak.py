"""SRE tryout: while the database of serve/run was unreachable, `leader lock check failed:` was logged at every
scrape and evaluation (every 2-4 s) with the driver's whole multi-line text, and nothing said when it recovered.
Now: one warning with the first line when the checks start failing, then at most one every few minutes with a
count, and one when a check succeeds again. Times come from an injected clock."""

from __future__ import annotations

import logging

import pytest

from driftline.service.streak import FailureStreak

LOGGER = "driftline.service.leader"


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]


class _Err(Exception):
    pass


def test_a_streak_is_logged_at_its_start_every_five_minutes_and_at_its_end(caplog) -> None:
    now = [1000.0]
    streak = FailureStreak("leader lock check", logging.getLogger(LOGGER), every_s=300.0, monotonic=lambda: now[0])
    caplog.set_level(logging.INFO, logger="driftline")
    err = _Err("connection failed: Connection refused\n\tIs the server running on that host?\n[SQL: SELECT 1]")
    for _ in range(75):  # a check every 4 s: 296 s of outage
        streak.failed(err)
        now[0] += 4.0
    assert _lines(caplog) == ["leader lock check failed: connection failed: Connection refused "
                              "(logged again every 300s while it keeps failing)"]
    streak.failed(err)  # 300 s after the first line
    streak.failed(err)
    assert _lines(caplog)[1:] == ["leader lock check still failing, 76 attempts in 300s: connection failed: "
                                  "Connection refused"]
    now[0] += 10.0
    streak.succeeded()
    streak.succeeded()
    assert _lines(caplog)[2:] == ["leader lock check succeeded again after 77 failed attempts in 310s"]
    streak.failed(_Err("timeout"))  # a new outage is a new streak
    assert _lines(caplog)[3:] == ["leader lock check failed: timeout (logged again every 300s while it keeps "
                                  "failing)"]


@pytest.mark.postgres
def test_leader_lock_checks_against_an_unreachable_database_log_one_line_then_the_recovery(pg_behind_forwarder,
                                                                                          caplog) -> None:
    from driftline.config import Config
    from driftline.service.process import Service
    from driftline.storage.store import Store

    pg = pg_behind_forwarder
    store = Store(pg.url)
    store.migrate()
    now = [0.0]
    service = Service(Config(model="m"), store, port=0, evaluate=False)
    service.lock_failures.monotonic = lambda: now[0]
    locks = (service.leader, service.exporter_lock)
    assert all(lock.failures is service.lock_failures for lock in locks)  # one streak per process, not per lock
    caplog.set_level(logging.INFO, logger="driftline")
    try:
        assert all(lock.held() for lock in locks)
        pg.forwarder.stop()  # live connections dropped, new ones refused
        for _ in range(30):  # two minutes of scrapes and evaluations
            assert not any(lock.held() for lock in locks)
            now[0] += 4.0
        lines = _lines(caplog)
        assert len(lines) == 1 and lines[0].startswith("leader lock check failed: "), lines
        assert "\n" not in lines[0] and "[SQL:" not in lines[0], lines[0]
        now[0] += 300.0
        assert not service.exporter_lock.held()
        assert _lines(caplog)[1].startswith("leader lock check still failing, 61 attempts in 420s: "), _lines(caplog)
        pg.forwarder.start()
        assert service.exporter_lock.held() and service.leader.held()
        assert _lines(caplog)[2:] == ["leader lock check succeeded again after 61 failed attempts in 420s"]
    finally:
        pg.forwarder.start()
        for lock in locks:
            lock.release()
        store.close()
