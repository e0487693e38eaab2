"""Live operational metrics of one driftline process (not in the database): consumer lag, batch durations,
notification deliveries. Kept in a private CollectorRegistry that the exporter's HTTP server also serves.

The Kafka consumer updates them through `set_lags` / `observe_batch`; the notifier through `delivered`/`failed`.
"""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

BATCH_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
RECORD_BUCKETS = (1, 10, 50, 100, 500, 1000, 5000, 10000, 20000, 50000, 100000)
"""Records per stored batch: kafka.batch_max_records is at most 100,000 by default's order (20,000)."""


class OpsMetrics:
    """Process-local Prometheus metrics with the contract's names (docs/METRICS.md, Pipeline)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.consumer_lag = Gauge(
            "driftline_consumer_lag_messages", "Kafka end offset minus the position stored with the state in the "
            "database.",
            ["topic", "partition"], registry=self.registry)
        self.batch_duration = Histogram(
            "driftline_batch_duration_seconds", "Wall time to process one batch (decode, accumulate, commit).",
            buckets=BATCH_BUCKETS, registry=self.registry)
        self.batch_records = Histogram(
            "driftline_batch_records", "Kafka records per stored batch (each partition's records up to its "
            "give-back, dead letters included).", buckets=RECORD_BUCKETS, registry=self.registry)
        self.notifications_sent = Counter(
            "driftline_notifications_sent", "Notifications delivered (Alertmanager, webhook).",
            ["receiver"], registry=self.registry)
        self.notifications_failed = Counter(
            "driftline_notifications_failed", "Failed notification delivery attempts (each retry counts).",
            ["receiver"], registry=self.registry)

    def set_lags(self, lags: Mapping[tuple[str, int], int]) -> None:
        """Replace the lag series with these (topic, partition) → messages; partitions not given disappear."""
        self.consumer_lag.clear()
        for (topic, partition), lag in lags.items():
            self.consumer_lag.labels(topic=topic, partition=str(partition)).set(max(0, int(lag)))

    def observe_batch(self, seconds: float, records: int | None = None) -> None:
        """Record the wall time of one processed batch and, from the live consumer, how many records it stored
        (verify tryout: nothing exported said how big batches were, so kafka.batch_max_records could not be checked
        from outside)."""
        self.batch_duration.observe(max(0.0, seconds))
        if records is not None:
            self.batch_records.observe(max(0, records))

    def receivers(self, names: list[str]) -> None:
        """Create the notification series of configured receivers at 0, so rates exist before the first send."""
        for name in names:
            self.notifications_sent.labels(receiver=name)
            self.notifications_failed.labels(receiver=name)

    def delivered(self, receiver: str) -> None:
        """Count one successful delivery."""
        self.notifications_sent.labels(receiver=receiver).inc()

    def failed(self, receiver: str) -> None:
        """Count one failed delivery attempt."""
        self.notifications_failed.labels(receiver=receiver).inc()
