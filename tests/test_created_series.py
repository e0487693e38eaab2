"""`run` exported `<name>_created` series for its process counters and histogram (driftline_batch_duration_seconds,
consumer_records, consumer_offset_resets, consumer_client_restarts, dead_letter_topic_sent/truncated, notifications),
none in docs/METRICS.md (SRE tryout). They are dropped where the process registry is served, per collector (no
process-global prometheus_client switch); the series themselves stay."""

from __future__ import annotations

from prometheus_client import generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics

from driftline.config import load
from driftline.exporter.collector import SnapshotCollector
from driftline.exporter.http import build_registry
from driftline.kafka.health import consumed_counter
from driftline.kafka.signals import signals
from driftline.ops import OpsMetrics
from driftline.storage.store import Store

from test_freshness import EXAMPLE, T0


def test_process_metrics_are_served_without_created_series(tmp_path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'c.db'}", clock=lambda: T0)
    store.migrate()
    ops = OpsMetrics()
    kafka = signals(ops)
    for counter in (kafka.dlt_sent, kafka.dlt_truncated, kafka.client_restarts):
        counter.inc()
    kafka.offset_resets.labels(topic="t", problem="beyond_end", policy="earliest").inc()
    consumed_counter(ops).labels(topic="t").inc(3)
    ops.observe_batch(0.2, 300)
    ops.notifications_sent.labels(receiver="am").inc()
    try:
        registry = build_registry(SnapshotCollector(store, load(EXAMPLE), clock=lambda: T0), ops)
        for text in (generate_latest(registry).decode(), generate_openmetrics(registry).decode()):
            assert "_created" not in text
            assert "driftline_dead_letter_topic_sent_total 1.0" in text
            assert 'driftline_consumer_records_total{topic="t"} 3.0' in text
            assert "driftline_batch_duration_seconds_count 1.0" in text
            assert 'driftline_batch_duration_seconds_bucket{le="+Inf"} 1.0' in text
            assert "driftline_batch_records_sum 300.0" in text and 'driftline_batch_records_bucket{le="500.0"} 1.0' in text
    finally:
        store.close()
