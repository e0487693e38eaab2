"""What goes into one stored batch: polls gathered for a short linger time, then only records at or after each
partition's expected offset (older ones are re-deliveries after a seek)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from kafka import TopicPartition

Batch = dict[TopicPartition, list[Any]]
"""Polled records per partition (kafka-python ConsumerRecords: .offset, .value)."""

log = logging.getLogger(__name__)


def fill(poll: Callable[..., Batch], polled: Batch, limit: int, linger_s: float, stop: threading.Event,
         rebalancing: Callable[[], bool], monotonic: Callable[[], float]) -> Batch:
    """Keep polling for up to `linger_s` after the first records, until `limit` records: a busy stream is then
    stored in few large transactions (each costs a read-modify-write of every bucket it touches). Stops at once
    on a rebalance, on stop, or when a poll brings nothing."""
    count = sum(len(r) for r in polled.values())
    if not count or linger_s <= 0:
        return polled
    batch: Batch = {tp: list(recs) for tp, recs in polled.items()}
    deadline = monotonic() + linger_s
    while count < limit and not stop.is_set() and not rebalancing():
        left = deadline - monotonic()
        if left <= 0:
            break
        more = poll(timeout_ms=max(1, int(left * 1000)), max_records=limit - count)
        if not more:
            break
        for tp, recs in more.items():
            batch.setdefault(tp, []).extend(recs)
            count += len(recs)
    return batch


def fresh_records(polled: Batch, expected: dict[TopicPartition, int], pending: set[TopicPartition]) -> Batch:
    """Records of positioned partitions at or after the expected offset (older ones are re-deliveries)."""
    batch: Batch = {}
    for tp, recs in polled.items():
        start = expected.get(tp)
        if start is None or tp in pending or not recs:
            continue
        if recs[0].offset < start:
            recs = [r for r in recs if r.offset >= start]
            if not recs:
                continue
        if recs[0].offset > start:
            log.debug("%s[%d]: offsets %d..%d absent (retention, compaction or control records)",
                      tp.topic, tp.partition, start, recs[0].offset - 1)
        batch[tp] = recs
    return batch
