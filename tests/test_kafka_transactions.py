"""Transactions on the live path (`driftline run` against the real tansu broker): stored positions pass the
commit markers a transactional producer leaves, so an idle partition shows no lag and a restart re-reads nothing.
(tansu does not report aborted transactions to consumers: their skipping is pinned against kafka-python's own
record walk in test_kafka_decode.py.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kafka_fixtures import create_topics, unique_name
from kafka_service_support import StoreProbe, make_events, start_service, wait_until, write_config

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


def _end_offsets(bootstrap: str, topics: dict[str, str]) -> dict[tuple[str, int], int]:
    """Log end offsets (markers included) of every partition, by topic kind."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_uncommitted")
    try:
        tps = [TopicPartition(topic, p) for topic in topics.values() for p in (0, 1)]
        ends = consumer.end_offsets(tps)
    finally:
        consumer.close()
    kind = {topic: k for k, topic in topics.items()}
    return {(kind[tp.topic], tp.partition): n for tp, n in ends.items()}


def test_positions_pass_commit_markers_so_idle_partitions_show_no_lag(kafka_bootstrap: str, tmp_path: Path) -> None:
    """Two committed transactions over both topics: every event is counted once and each partition's stored
    position reaches its log end (the marker after its last record), so the exported lag is 0 everywhere; before,
    it stayed 1 per partition until new records came."""
    from kafka import KafkaProducer

    topics = {"predictions": unique_name("predictions"), "outcomes": unique_name("outcomes")}
    create_topics(kafka_bootstrap, topics.values(), 2)
    events = make_events(tmp_path, days=0.3)
    db = f"sqlite:///{tmp_path / 'live.db'}"
    svc = start_service(tmp_path, write_config(tmp_path, topics, unique_name("g")), db, kafka_bootstrap)
    probe = StoreProbe(db, topics)
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, transactional_id=unique_name("tx"))
    try:
        producer.init_transactions()
        half = len(events.records) // 2
        for part in (events.records[:half], events.records[half:]):
            producer.begin_transaction()
            for kind, key, payload in part:
                producer.send(topics[kind], key=key, value=payload)
            producer.commit_transaction()
        ends = _end_offsets(kafka_bootstrap, topics)
        assert sum(ends.values()) > len(events.records)  # the markers take offsets
        wait_until(lambda: probe.positions() == ends, 120, "stored positions at the log ends", procs=(svc,))
        counted = {k: v for k, v in probe.store.counters().items() if k[0] in ("events", "dead_letters")}
        assert sum(counted.values()) == len(events.records)  # each record once (as an event or a dead letter)

        def lags() -> list[str] | None:
            """The exported lags once all four are 0 (a sample is up to 5 s old: since 9963790 the first one is taken
            at the assignment, before anything is stored); None until then."""
            code, text = svc.get("/metrics")
            found = re.findall(r'^driftline_consumer_lag_messages\{[^}]*\} (\S+)$', text, re.M) if code == 200 else []
            return found if len(found) == 4 and all(float(v) == 0.0 for v in found) else None

        wait_until(lags, 30, "every exported lag 0 (before the fix it stayed 1 per partition)", procs=(svc,))
        assert svc.terminate() == 0
    finally:
        producer.close(timeout=10)
        svc.kill()
        probe.close()
