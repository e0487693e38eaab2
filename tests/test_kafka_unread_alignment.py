"""The event-time alignment's wait for a partition not read yet (kafka/alignment.py) with the real broker (tansu):
a batch polled before every partition with records left has been read once must not be given back and fetched
again; the partitions not read yet are read alone and the batch is cut with them.

Reproduction (before the fix): kafka-python's poll drains one partition's fetch before the next, so with
kafka.batch_max_records 100 the first batch of a two-partition backlog held one partition only; the whole batch
was given back (sought back, paused) until the other was read, and its records were polled twice (`run` ×1 on a
5-day backlog: 2 to 5 give-backs of up to 20,000 records)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from helpers import outcome, pred
from kafka_fixtures import create_topics, unique_name
from kafka_service_support import StoreProbe, wait_until, write_config

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

PREDICTIONS, OUTCOMES = 600, 300


def test_a_first_batch_without_a_partition_is_not_fetched_again(kafka_bootstrap: str, tmp_path: Path) -> None:
    """A backlog of one prediction and one outcome partition, an hour of events (well within kafka.align_within),
    batches of 100: every record is polled exactly once and stored, nothing given back, and no stored batch is
    larger than kafka.batch_max_records (the partitions read alone are shared into it, not added to it)."""
    from kafka import KafkaProducer

    from driftline.config import from_dict
    from driftline.ingest.pipeline import Pipeline
    from driftline.kafka.consumer import LiveConsumer
    from driftline.kafka.settings import resolve
    from driftline.storage.store import Store

    topics = {"predictions": unique_name("predictions"), "outcomes": unique_name("outcomes")}
    create_topics(kafka_bootstrap, topics.values(), 1)
    start = time.time() - 3600.0
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, linger_ms=5)
    try:
        for i in range(PREDICTIONS):
            producer.send(topics["predictions"], key=f"p{i}".encode(), value=pred(f"p{i}", 0.5, start + 5.0 * i))
        for i in range(OUTCOMES):
            producer.send(topics["outcomes"], key=f"p{i}".encode(), value=outcome(f"p{i}", 1, start + 5.0 * i + 60))
        producer.flush(timeout=60)
    finally:
        producer.close(timeout=10)

    config = from_dict(yaml.safe_load(write_config(tmp_path, topics, unique_name("g"), batch=100).read_text()))
    db = f"sqlite:///{tmp_path / 'live.db'}"
    store = Store(db)
    store.migrate()
    polled = {"records": 0, "batches_one_partition": 0}

    class Counted(LiveConsumer):
        def attach(self, consumer: Any) -> Any:
            real = consumer.poll

            def poll(*args: Any, **kwargs: Any) -> Any:
                got = real(*args, **kwargs)
                polled["records"] += sum(map(len, got.values()))
                return got

            consumer.poll = poll
            return super().attach(consumer)

    stop = threading.Event()
    consumer = Counted(Pipeline(config, store), resolve(config.kafka, kafka_bootstrap, {}), stop)
    thread = threading.Thread(target=consumer.run, daemon=True)
    thread.start()
    probe = StoreProbe(db, topics)
    try:
        wait_until(lambda: probe.total("predictions") == PREDICTIONS and probe.total("outcomes") == OUTCOMES, 90,
                   "every record stored")
    finally:
        stop.set()
        thread.join(timeout=30)
        probe.close()
    counters = store.counters()
    store.close()
    assert counters[("events", "prediction")] == PREDICTIONS and counters[("events", "outcome")] == OUTCOMES
    assert polled["records"] == PREDICTIONS + OUTCOMES  # the old code polled the first batch's 100 again
    assert consumer.stored_batches >= (PREDICTIONS + OUTCOMES) / 100
