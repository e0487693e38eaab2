"""SRE tryout: one 78 s outage was logged as "database reachable again after 37s (a write committed)": the outage
was counted from when the stalled write gave up (41 s in), not from when it began. It is now counted from the
start of the first failed call (the clock is injected: DbCalls and the consumer read the same fake clock)."""

from __future__ import annotations

import logging
from types import SimpleNamespace

from driftline.kafka.db_health import DatabaseHealth
from driftline.kafka.health import Backoff, ConsumerStatus
from driftline.storage.calls import DbCalls
from driftline.storage.errors import StoreUnavailable, WriteLocked


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _health(clock: Clock, calls: DbCalls, lock_timeout_s: float = 5.0) -> DatabaseHealth:
    h = DatabaseHealth()
    store = SimpleNamespace(calls=calls, lock_timeout_s=lock_timeout_s)
    h.pipeline = SimpleNamespace(store=store)  # type: ignore[assignment]
    h.status, h.monotonic, h.db_backoff = ConsumerStatus(), clock, Backoff()
    h.db_retry_at, h.db_down_since, h.db_failed, h.held, h.pending, h.lock_patience_s = 0.0, None, "", None, set(), 30.0
    return h


def _reachable_again(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "again after" in r.getMessage()]


def test_outage_is_counted_from_the_start_of_the_stalled_call_that_failed(caplog) -> None:
    clock = Clock()
    calls = DbCalls(monotonic=clock)
    health = _health(clock, calls)
    caplog.set_level(logging.INFO, logger="driftline")
    calls.begin("write")  # the batch's write stalls 41 s, then fails
    clock.now += 41
    calls.end(False)
    health._db_down(StoreUnavailable("server closed the connection"), "writing a batch")
    clock.now += 37  # retried until a write commits
    calls.begin("write")
    calls.end(True)
    health._db_written()
    assert _reachable_again(caplog) == ["database reachable again after 78s (a write committed)"]


def test_a_call_that_failed_at_once_counts_from_its_failure_and_a_success_forgets_it(caplog) -> None:
    clock = Clock()
    calls = DbCalls(monotonic=clock)
    health = _health(clock, calls)
    caplog.set_level(logging.INFO, logger="driftline")
    calls.begin("read")
    calls.end(True)
    assert calls.failed_for() == 0.0
    calls.begin("write")  # connection refused: fails at once
    calls.end(False)
    clock.now += 3
    health._db_down(StoreUnavailable("connection refused"), "writing a batch")
    clock.now += 20
    health._db_written()
    assert _reachable_again(caplog) == ["database reachable again after 23s (a write committed)"]


def test_a_lock_wait_still_counts_from_when_the_wait_began(caplog) -> None:
    clock = Clock()
    calls = DbCalls(monotonic=clock)
    health = _health(clock, calls, lock_timeout_s=30.0)
    health.lock_patience_s = 0.0
    caplog.set_level(logging.INFO, logger="driftline")
    calls.begin("write")
    clock.now += 30
    calls.end(False)
    health._db_down(WriteLocked("held"), "writing a batch")
    clock.now += 10
    health._db_written()
    assert _reachable_again(caplog) == ["database writable again after 40s (the other writer released its write lock)"]
