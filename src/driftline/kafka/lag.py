"""Lag for every partition of both topics — owned by this process or not — from the positions stored in the
database and the log end offsets, so a group that owns nothing (a stalled rebalance) still shows its lag."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kafka import TopicPartition

Lags = dict[tuple[str, int], int]


def lags_from(ends: Mapping[TopicPartition, int], stored: Mapping[str, Mapping[int, int]],
              expected: Mapping[TopicPartition, int], held: Mapping[TopicPartition, int] | None = None) -> Lags:
    """(topic, partition) → end offset − stored position (the newer of the database's and this process's own;
    never negative: a position beyond the end is an offset-reset problem, reported separately).

    `held`: log start of each partition held by an unresolved offset reset (kafka.on_offset_reset: fail). Its
    stored position belongs to the old log (beyond the new end, or inside a replaced log), so end − position
    said 0 or too little while nothing is consumed: its lag is every record the log holds, end − start (or
    end − position where retention deleted records never read: more)."""
    out: Lags = {}
    for tp, end in ends.items():
        pos = max(stored.get(tp.topic, {}).get(tp.partition, 0), expected.get(tp, 0))
        if held is not None and tp in held:
            pos = min(pos, held[tp])
        out[(tp.topic, tp.partition)] = max(0, int(end) - pos)
    return out


def owned_lag(lags: Mapping[tuple[str, int], int], owned: Iterable[TopicPartition]) -> int | None:
    """The lag /readyz names after the partitions this member owns: theirs alone, None when it owns none (or none has
    a lag yet). Tryout: a member left with 0 partitions by a rebalance said "lag 2836" for seconds while the new
    owner had stored everything: the sum was over every partition, from the database sample of up to 5 s before."""
    keys = {(tp.topic, tp.partition) for tp in owned}
    known = [lag for key, lag in lags.items() if key in keys]
    return sum(known) if known else None


def end_offsets(consumer: Any, topics: Iterable[str], timeout_ms: int = 2000, side: Any = None
                ) -> dict[TopicPartition, int]:
    """End offsets of every partition of `topics` known to the consumer's metadata (raises KafkaError); asked of
    the `side` client (log_ids.SideIds) when given and answering, so not queued behind the consumer's parked fetch."""
    tps = [TopicPartition(t, p) for t in topics for p in sorted(consumer.partitions_for_topic(t) or ())]
    if not tps:
        return {}
    if side is not None:
        ends = side.end_offsets(tps, timeout_ms)
        if ends is not None:
            return ends
    return dict(consumer.end_offsets(tps, timeout_ms=timeout_ms))


def fetch_position(consumer: Any, tp: TopicPartition) -> int | None:
    """kafka-python's in-memory fetch position of an assigned partition (no network call, unlike position());
    None when unknown or not assigned. It passes transaction markers and aborted records once a partition's
    fetched data is drained."""
    try:
        state = consumer._subscription.assignment.get(tp)  # noqa: SLF001 - no non-blocking public accessor in 3.x
    except AttributeError:
        return None
    position = getattr(state, "position", None)
    return None if position is None else int(position.offset)
