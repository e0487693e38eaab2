"""A client rebuilt (kafka.stall_restart) while the broker lacks its topics (restarted empty after being down) logs
the gap once at ERROR, a reminder every 5 min and its end, not one ERROR per 10 s attempt (live tryout: six lines a
minute until `driftline topics create`). Fixed in driftline/kafka/reconnect.py."""

from __future__ import annotations

import logging

import pytest

from driftline.kafka.health import ConsumerStatus
from driftline.kafka.reconnect import connect_once_topics_exist
from driftline.kafka.topics import TopicsError

MISSING = "topic(s) predictions, outcomes do not exist: create them with the same partition count"


class _Stop:
    """A stop event whose wait() moves the injected clock instead of sleeping."""

    def __init__(self, clock: list[float]) -> None:
        self.clock = clock

    def is_set(self) -> bool:
        return False

    def wait(self, timeout: float | None = None) -> bool:
        self.clock[0] += timeout or 0.0
        return False


def test_a_rebuilt_client_logs_missing_topics_once_per_gap(caplog: pytest.LogCaptureFixture) -> None:
    clock = [0.0]
    calls = []

    def connect() -> bool:
        calls.append(clock[0])
        if len(calls) <= 61:  # missing for 10 min 10 s: 61 attempts, one every 10 s
            raise TopicsError(MISSING)
        return True

    status = ConsumerStatus()
    logger = logging.getLogger("driftline.kafka.consumer")
    with caplog.at_level(logging.DEBUG, logger="driftline"):
        connect_once_topics_exist(connect, _Stop(clock), status, logger, lambda: clock[0])
    assert len(calls) == 62
    lines = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert lines == [
        ("ERROR", f"{MISSING}; retrying every 10s (logged again every 300s while it lasts)"),
        ("ERROR", f"{MISSING}; still, 31 attempts in 300s"),
        ("ERROR", f"{MISSING}; still, 61 attempts in 600s"),
        ("WARNING", "Kafka topics usable again after 61 failed attempts in 610s: connected"),
    ]
    assert status.error == MISSING  # /readyz named them while it lasted


def test_another_topic_problem_is_logged_when_it_changes(caplog: pytest.LogCaptureFixture) -> None:
    clock = [0.0]
    problems = [MISSING, MISSING, "topics predictions (2 partitions) and outcomes (3) are not co-partitioned"]

    def connect() -> bool:
        if problems:
            raise TopicsError(problems.pop(0))
        return True

    with caplog.at_level(logging.DEBUG, logger="driftline"):
        connect_once_topics_exist(connect, _Stop(clock), ConsumerStatus(), logging.getLogger("driftline.kafka.consumer"),
                                  lambda: clock[0])
    errors = [r.getMessage().split(";")[0] for r in caplog.records if r.levelno == logging.ERROR]
    assert errors == [MISSING, "topics predictions (2 partitions) and outcomes (3) are not co-partitioned"]


def test_a_gap_the_topic_watch_logged_goes_on_with_reminders_only(caplog: pytest.LogCaptureFixture) -> None:
    """The running client's topic watch logged the gap (its ERROR at t=100) before the client was rebuilt at t=400:
    the rebuilt client's retries add no second start line, a reminder 5 min on with the gap's whole length, and no
    end line (the watch's `… exist again after Ns`, logged when the new client is attached, is it)."""
    clock = [400.0]
    calls = []

    def connect() -> bool:
        calls.append(clock[0])
        if len(calls) <= 31:  # missing for another 5 min 10 s
            raise TopicsError(MISSING)
        return True

    with caplog.at_level(logging.DEBUG, logger="driftline"):
        connect_once_topics_exist(connect, _Stop(clock), ConsumerStatus(), logging.getLogger("driftline.kafka.consumer"),
                                  lambda: clock[0], logged_since=100.0)
    assert len(calls) == 32
    lines = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert lines == [("ERROR", f"{MISSING}; still, 31 attempts in 600s")]


def test_a_client_rebuilt_while_the_topics_are_missing_logs_one_error(tmp_path, caplog: pytest.LogCaptureFixture) -> None:
    """The consumer's own rebuild (kafka.stall_restart) goes through it: 30 attempts over 5 min, one ERROR line."""
    from driftline.storage.store import Store
    from kafka_service_support import make_events
    from test_kafka_faults import consumer
    from test_kafka_loop import Clock, FakeConsumer, partitioned

    events = make_events(tmp_path, days=0.05, per_day=1500)
    store = Store(f"sqlite:///{tmp_path / 'live.db'}")
    store.migrate()
    clock = Clock()
    logs = partitioned(events.records)
    lc, _ = consumer(store, logs, clock)
    fresh, attempts = FakeConsumer(logs, store), []

    class Stop:
        def is_set(self) -> bool:
            return False

        def wait(self, timeout: float | None = None) -> bool:
            clock.t += timeout or 0.0
            return False

    def connect() -> bool:
        attempts.append(clock.t)
        if len(attempts) <= 29:
            raise TopicsError(MISSING)
        fresh.listener = lc.attach(fresh)
        return True

    lc.connect, lc.stop = connect, Stop()
    with caplog.at_level(logging.INFO, logger="driftline.kafka.consumer"):
        lc._rebuild(clock.t)
    assert len(attempts) == 30 and lc.consumer is fresh
    assert [r.getMessage().split(";")[0] for r in caplog.records if r.levelno == logging.ERROR] == [MISSING]
