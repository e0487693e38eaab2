"""Tryout: `run` consuming from tansu; the broker restarted advertising a name this host cannot resolve. The outage
was logged at its start, then kafka.stall_restart (90 s) rebuilt the client and its connect retries logged one
WARNING per attempt ("Kafka at … is unusable (attempt N): …", every 15 s at the backoff's cap) for as long as it
lasted. Now the retries of a client rebuilt during an outage already logged only remind of it, at most every 5 min
(driftline/streak.py), and the end is the consumer's one "Kafka reachable again" line. Fixed in
driftline/kafka/connect.py (open_consumer's `outage`)."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest
from kafka.errors import KafkaConnectionError

from driftline.kafka import connect
from driftline.kafka.health import Backoff, ConsumerStatus
from driftline.kafka.settings import KafkaSettings
from driftline.streak import FailureStreak


def test_connect_retries_during_a_logged_outage_only_remind_of_it(monkeypatch: pytest.MonkeyPatch,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    clock = [0.0]
    stop = threading.Event()
    attempts = []

    class Admin:
        def close(self) -> None:
            pass

    def open_admin(settings: Any) -> Admin:
        clock[0] += 15.0  # one attempt every 15 s (the backoff's cap), 41 of them: 10 min 15 s of outage
        attempts.append(clock[0])
        if len(attempts) <= 41:
            raise KafkaConnectionError("DNS Resolution failure")
        return Admin()

    class Consumer:
        def __init__(self, **kwargs: Any) -> None:
            self.kwargs = kwargs

    monkeypatch.setattr(connect.topics, "open_admin", open_admin)
    monkeypatch.setattr(connect.topics, "check", lambda admin, settings: 2)
    monkeypatch.setattr("kafka.KafkaConsumer", Consumer)
    outage = FailureStreak("Kafka", logging.getLogger("driftline.kafka.consumer"), monotonic=lambda: clock[0])
    outage.resume(0.0)  # the consumer logged the outage's start (upkeep._broker_status)
    with caplog.at_level(logging.DEBUG, logger="driftline"):
        consumer = connect.open_consumer(KafkaSettings(bootstrap="127.0.0.1:9"), stop, Backoff(0.0, 0.0),
                                         ConsumerStatus(), None, outage)
    assert isinstance(consumer, Consumer) and len(attempts) == 42
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings == [f"Kafka still failing, {n} attempts in {s}s: Kafka at 127.0.0.1:9 unreachable: "
                        "KafkaConnectionError: DNS Resolution failure" for n, s in ((21, 300), (41, 600))]
    assert outage.attempts == 0  # ended without a line: the consumer logs "Kafka reachable again after …"
