"""driftline_kafka_up is /readyz's Kafka check, read at scrape time (SRE tryout: with nothing listening at the
bootstrap address, or the broker killed under a running `run`, /readyz said 503 but /metrics gave no sign)."""

from __future__ import annotations

import threading
from pathlib import Path

from prometheus_client import generate_latest

from driftline.config import Config, Kafka
from driftline.ingest.pipeline import Pipeline
from driftline.kafka.consumer import LiveConsumer
from driftline.kafka.health import ConsumerStatus
from driftline.kafka.settings import resolve
from driftline.storage.store import Store


def _kafka_up(lc: LiveConsumer) -> float:
    lines = [ln for ln in generate_latest(lc.ops.registry).decode().splitlines()
             if ln.startswith("driftline_kafka_up ")]
    assert len(lines) == 1, lines
    return float(lines[0].split()[1])


def test_kafka_up_follows_the_readiness_kafka_check_in_every_phase(tmp_path: Path) -> None:
    """0 before and while connecting and while the coordinator is lost, 1 once connected: exactly when /readyz's
    reason is (or is not) a Kafka one."""
    store = Store(f"sqlite:///{tmp_path / 'k.db'}")
    store.migrate()
    settings = resolve(Kafka(predictions_topic="p", outcomes_topic="o"), "127.0.0.1:1", {})
    lc = LiveConsumer(Pipeline(Config(), store, clock=lambda: 1.9e9), settings, threading.Event())
    lc.unowned_since = None
    states = [ConsumerStatus(), ConsumerStatus(phase="waiting for the database"),
              ConsumerStatus(phase="connecting", error="NoBrokersAvailable"),
              ConsumerStatus(phase="consuming", broker_ok=False), ConsumerStatus(phase="consuming", broker_ok=True),
              ConsumerStatus(phase="stopped")]
    seen = []
    for status in states:
        lc.status = status  # attach() replaces the status object: the gauge must follow the current one
        ready, reason = lc.ready()
        up = _kafka_up(lc)
        assert up == (0.0 if reason.startswith("kafka ") and not ready else 1.0), (status, reason, up)
        seen.append(up)
    assert seen == [0.0, 0.0, 0.0, 0.0, 1.0, 0.0]
    store.close()
