"""The live consumer's own fault signals (process-local, in the OpsMetrics registry): offset resets, partitions
owned, key checks and dead-letter topic deliveries. Documented in docs/METRICS.md (Pipeline)."""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from collections.abc import Iterable
from typing import Any

from prometheus_client import Counter, Gauge

from ..ingest.keys import KEY_REASONS
from ..ops import OpsMetrics

RESET_PROBLEMS = ("beyond_end", "before_start", "replaced")
SKIPPED_LOGS = ("found", "previous")


@dataclass(frozen=True)
class KafkaSignals:
    """Series written by the consumer; one set per OpsMetrics registry."""

    offset_resets: Counter
    offset_reset_skipped: Counter
    offset_unresolved: Gauge
    partitions_owned: Gauge
    group_stable: Gauge
    kafka_up: Gauge
    topic_missing: Gauge
    group_databases: Gauge
    key_mismatches: Counter
    dlt_sent: Counter
    dlt_failed: Counter
    dlt_truncated: Counter
    client_restarts: Counter
    stale_batches: Counter


_SIGNALS: weakref.WeakKeyDictionary[Any, KafkaSignals] = weakref.WeakKeyDictionary()


def signals(ops: OpsMetrics) -> KafkaSignals:
    """The consumer's series in `ops.registry` (created once per registry)."""
    reg = ops.registry
    if reg not in _SIGNALS:
        _SIGNALS[reg] = KafkaSignals(
            offset_resets=Counter("driftline_consumer_offset_resets", "Stored positions found outside the log "
                                  "(problem: beyond_end = topic/broker reset, before_start = retention, replaced = the "
                                  "topic's id changed), by the policy applied.", ["topic", "problem", "policy"],
                                  registry=reg),
            offset_reset_skipped=Counter("driftline_consumer_offset_reset_skipped_records", "Records an offset "
                                         "reset skipped: log=found, of the log found (retention, or jumped by "
                                         "latest; exact), log=previous, of the reset log after the stored position "
                                         "(never ingested; only when its end was seen before).", ["topic", "log"],
                                         registry=reg),
            offset_unresolved=Gauge("driftline_consumer_offset_reset_unresolved", "1 while a partition is stopped "
                                    "under kafka.on_offset_reset: fail.", ["topic", "partition"], registry=reg),
            partitions_owned=Gauge("driftline_consumer_partitions_owned", "Partitions this process owns now.",
                                   registry=reg),
            group_stable=Gauge("driftline_consumer_group_stable", "1 while this member is stable in its consumer "
                               "group (coordinator known, no rebalance under way), 0 while it joins or rebalances.",
                               registry=reg),
            kafka_up=Gauge("driftline_kafka_up", "1 while this process's Kafka client reaches the brokers (built "
                           "after the topics were checked, group coordinator known with recent heartbeats: /readyz's "
                           "Kafka check), 0 while it connects, waits for the database first, or the coordinator is "
                           "lost; read at scrape time.", registry=reg),
            topic_missing=Gauge("driftline_kafka_topic_missing", "1 while a subscribed topic (kafka.predictions_topic, "
                                "kafka.outcomes_topic) does not exist on the broker that answers (restarted empty, or "
                                "the topic deleted): driftline_kafka_up is 0 then too, but the broker is up; create "
                                "the topics (`driftline topics create --partitions N`).", ["topic"], registry=reg),
            group_databases=Gauge("driftline_consumer_group_databases", "Databases the members of this process's "
                                  "consumer group write to, as its leader reported at the last assignment: 1 when "
                                  "all share one (or the leader is an older driftline); above 1 the kafka.group_id is "
                                  "shared by deployments on different databases.", registry=reg),
            key_mismatches=Counter("driftline_kafka_key_mismatches", "Records whose Kafka key is not their "
                                   "prediction_id (problem: mismatch, missing), by topic and the action taken.",
                                   ["topic", "problem", "action"], registry=reg),
            dlt_sent=Counter("driftline_dead_letter_topic_sent", "Dead letters delivered to the dead-letter topic.",
                             registry=reg),
            dlt_failed=Counter("driftline_dead_letter_topic_failed", "Failed deliveries to the dead-letter topic "
                               "(each attempt; the database copy stays and is re-sent).", ["error"], registry=reg),
            dlt_truncated=Counter("driftline_dead_letter_topic_truncated", "Dead-letter payloads cut to "
                                  "kafka.dead_letter_max_bytes before sending.", registry=reg),
            client_restarts=Counter("driftline_consumer_client_restarts", "Kafka clients closed and rebuilt "
                                    "because group membership stayed broken for longer than "
                                    "kafka.stall_restart (positions are in the database: nothing is lost).",
                                    registry=reg),
            stale_batches=Counter("driftline_consumer_stale_batches", "Batches rejected because another consumer "
                                  "moved their partitions' stored positions meanwhile (re-read, never counted "
                                  "twice); a steady rate means two consumer groups on one database.", registry=reg),
        )
    return _SIGNALS[reg]


def mark_missing(sig: KafkaSignals, topics: Iterable[str], missing: Iterable[str]) -> None:
    """driftline_kafka_topic_missing of each subscribed topic: 1 for those in `missing`, else 0."""
    gone = set(missing)
    for topic in topics:
        sig.topic_missing.labels(topic=topic).set(1 if topic in gone else 0)


def zero_series(sig: KafkaSignals, topics: Iterable[str], on_offset_reset: str, on_key_mismatch: str) -> None:
    """Create the labelled counters the meta-alerts watch at 0 for these topics and policies: a series born at 1
    has no increase in Prometheus, so the first offset reset after a start (when resets are found) would not alert."""
    topics = list(topics)
    mark_missing(sig, topics, ())
    for topic in topics:
        for problem in RESET_PROBLEMS:
            sig.offset_resets.labels(topic=topic, problem=problem, policy=on_offset_reset)
        for which in SKIPPED_LOGS:
            sig.offset_reset_skipped.labels(topic=topic, log=which)
        if on_key_mismatch == "accept":
            for reason in KEY_REASONS:
                sig.key_mismatches.labels(topic=topic, problem=reason, action="accepted")
