"""Series the meta-alerts (alerts/meta.rules.yml) need from the first scrape: a labelled counter born at 1 has no
increase in Prometheus, so the first event after a start would never alert (issue 16.6, start-up)."""

from __future__ import annotations

import threading
from pathlib import Path

from prometheus_client import generate_latest

from driftline.config import Config, Kafka
from driftline.ingest.pipeline import Pipeline
from driftline.kafka.consumer import LiveConsumer
from driftline.kafka.settings import resolve
from driftline.storage.store import Store


def _scrape(tmp_path: Path, **kafka: str) -> str:
    store = Store(f"sqlite:///{tmp_path / 'm.db'}")
    store.migrate()
    settings = resolve(Kafka(predictions_topic="p", outcomes_topic="o", **kafka), "fake:1", {})
    lc = LiveConsumer(Pipeline(Config(), store, clock=lambda: 1.9e9), settings, threading.Event())
    return generate_latest(lc.ops.registry).decode()


def test_offset_reset_counters_exist_at_zero_before_the_first_reset(tmp_path: Path) -> None:
    """DriftlineOffsetReset: resets are found at start-up, on the first assignment; their series must be there
    at 0 already, for every topic and problem under the configured policy."""
    text = _scrape(tmp_path, on_offset_reset="latest")
    for topic in ("p", "o"):
        for problem in ("beyond_end", "before_start"):
            assert (f'driftline_consumer_offset_resets_total{{policy="latest",problem="{problem}",topic="{topic}"}} '
                    "0.0") in text


def test_accepted_key_mismatch_counters_exist_at_zero_under_policy_accept(tmp_path: Path) -> None:
    """DriftlineKeyMismatch: under kafka.on_key_mismatch accept the first wrongly keyed batch must be an increase;
    under dead_letter the store's dead-letter counters (every reason at 0) carry it instead."""
    (tmp_path / "accept").mkdir()
    text = _scrape(tmp_path / "accept", on_key_mismatch="accept")
    for topic in ("p", "o"):
        for problem in ("key_missing", "key_mismatch"):
            assert (f'driftline_kafka_key_mismatches_total{{action="accepted",problem="{problem}",topic="{topic}"}} '
                    "0.0") in text
    assert 'driftline_kafka_key_mismatches_total{' not in _scrape(tmp_path, on_key_mismatch="dead_letter")


def test_client_restart_counter_exists_at_zero_before_the_first_restart(tmp_path: Path) -> None:
    """DriftlineKafkaClientStuck: the first rebuilt client must be an increase, so the counter is there at 0."""
    assert "\ndriftline_consumer_client_restarts_total 0.0\n" in _scrape(tmp_path)
