"""What a pause of the consumer's own loop leaves behind, told apart from the broker problems it looks like.

SRE tryout: a `run` replica stopped with SIGSTOP for ~70 s while another stored its partitions logged "Kafka
unreachable (group coordinator lost …)" with the broker up the whole time (its heartbeats had stopped with the
process), and "the log end fell below the stored position" five times in 3 s (the high-water mark kafka-python had
cached before the pause was older than the positions the other replica stored meanwhile; no log shrank).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping
from typing import Any

from kafka import TopicPartition
from kafka.errors import KafkaError

from .health import broker_connected, heartbeat_bound_s
from .lag import end_offsets

log = logging.getLogger("driftline.kafka.consumer")


class LoopGap:
    """Gaps between housekeeping passes (about 1 s apart) longer than the heartbeat staleness bound, with the
    group membership lapsed: the process was stopped or starved, so its heartbeats stopped too; a lost coordinator
    or stale heartbeats are excused for one bound after it (the member rejoins), then judged as before."""

    def __init__(self) -> None:
        self.last: float | None = None
        """The monotonic time of the previous housekeeping pass (None: none yet, or the client was rebuilt)."""
        self.resumed_at = -math.inf
        self.grace_s = 0.0

    def reset(self) -> None:
        """Forget the previous pass: a new client was connected (the wait for it is no gap of the loop)."""
        self.last = None

    def observe(self, now: float, consumer: Any) -> None:
        """One housekeeping pass: a gap longer than the bound, after which the member is out of its group, is
        logged once as what it is."""
        last, self.last = self.last, now
        bound = heartbeat_bound_s(consumer)
        if last is None or now - last <= bound or broker_connected(consumer):
            return
        self.resumed_at, self.grace_s = now, bound
        log.warning("the consumer loop did not run for %.0fs (the process was stopped, or starved of CPU): its group "
                    "membership lapsed meanwhile; rejoining", now - last)

    def excuses(self, now: float) -> bool:
        """Whether a lost coordinator or stale heartbeats may still be the gap's doing (within the bound after it):
        not reported as Kafka unreachable until then."""
        return now - self.resumed_at <= self.grace_s


class BehindCheck:
    """Partitions whose fetched high-water mark is below the stored position, confirmed by a log end asked of the
    broker before they are checked again: a high-water mark cached before a pause is older than positions another
    member stored meanwhile. One that the broker's answer contradicted is not asked about again until its
    high-water mark changes (a paused partition's stays as it was)."""

    def __init__(self) -> None:
        self.cleared: dict[TopicPartition, int] = {}
        """Partition -> the high-water mark a fresh log end showed to be stale."""

    def really_behind(self, consumer: Any, side: Any, hws: Mapping[TopicPartition, int],
                      expected: Mapping[TopicPartition, int]) -> tuple[set[TopicPartition], dict[TopicPartition, int]]:
        """(the partitions of `hws` whose log end, asked now, is below the stored position; the log ends asked).
        None is taken for behind when asking fails (the broker down): the next pass asks again."""
        self.cleared = {tp: hw for tp, hw in hws.items() if self.cleared.get(tp) == hw}
        ask = {tp for tp in hws if tp not in self.cleared}
        if not ask:
            return set(), {}
        try:
            ends = end_offsets(consumer, topics_of(ask), side=side)
        except KafkaError as err:
            log.debug("log ends below the stored positions not confirmed: %s", err)
            return set(), {}
        really = {tp for tp in ask if tp in ends and ends[tp] < expected[tp]}
        self.cleared.update({tp: hws[tp] for tp in ask - really if tp in ends})
        return really, dict(ends)


def topics_of(tps: Iterable[TopicPartition]) -> list[str]:
    """The topics of `tps`, sorted."""
    return sorted({tp.topic for tp in tps})
