"""Consumer health: backoff, the status /readyz reports, broker connectivity and the per-topic records counter."""

from __future__ import annotations

import logging
import math
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import Counter as PromCounter

from ..ops import OpsMetrics
from ..streak import FailureStreak


class Backoff:
    """Exponential backoff: first, 2×first, … capped at `cap` seconds; reset after a success."""

    def __init__(self, first: float = 0.5, cap: float = 5.0) -> None:
        self.first, self.cap = first, cap
        self.attempts = 0

    def next(self) -> float:
        """Delay before the next attempt."""
        delay = min(self.cap, self.first * (2 ** self.attempts))
        self.attempts += 1
        return delay

    def reset(self) -> None:
        self.attempts = 0


@dataclass
class ConsumerStatus:
    """What readiness and logs report; written by the main loop, read by the exporter thread."""

    phase: str = "starting"
    broker_ok: bool = False
    db_ok: bool = True
    db_error: str = ""
    """Why the database is not usable (unreachable, or its write lock held by another writer) while not db_ok."""
    since: float = field(default_factory=time.monotonic)
    assigned: int = 0
    per_topic: tuple[tuple[str, int], ...] = ()
    """Partitions owned per topic, in the settings' order (replaced whole, so a reader never sees it half-built)."""
    lag: int | None = None
    """Messages behind on the partitions this member owns (lag.owned_lag); None while it owns none."""
    error: str = ""
    unresolved: str = ""
    """While the coordinator is lost or topics are missing: the broker address this host could not resolve and what
    to fix (dns_names)."""
    polls: FailureStreak = field(default_factory=lambda: FailureStreak("poll", logging.getLogger(
        "driftline.kafka.consumer")))
    """Polls failing in a row, logged by streak: a batch that cannot be decoded raises at every poll, and each
    logged `poll failed:` (twice a second for as long as it lasted)."""
    missing_topics: str = ""
    """While subscribed topics are missing from the broker: which, and what to do (topic_watch.py)."""

    def kafka_problem(self, now: float) -> str | None:
        """Why the client does not reach Kafka now (None when it does: built, and its group coordinator known with
        recent heartbeats): /readyz's first reason and driftline_kafka_up (0 while not None), one source of truth."""
        if self.phase != "consuming":
            return f"kafka {self.phase}" + (f": {self.error}" if self.error else "")
        if not self.broker_ok:
            unreachable = f"kafka unreachable for {now - self.since:.0f}s" + (
                f": {self.unresolved}" if self.unresolved else " (group coordinator unknown: the broker is down, or "
                "it answers but cannot name the group's coordinator)")
            both = self.unresolved and self.missing_topics
            return first_fix(unreachable, self.missing_topics) if both else unreachable
        if self.missing_topics and self.unresolved:  # a broker restarted empty advertising a bad name: both, it first
            return first_fix(self.unresolved, self.missing_topics)
        return self.missing_topics or None

    def assignment(self) -> str:
        """'8 partitions assigned (predictions 4, outcomes 4)': the total alone read as if each of two processes
        on two 4-partition topics held all 4 of a topic."""
        per_topic = self.per_topic  # one read: the total and the split always agree
        if not per_topic:
            return f"{self.assigned} partitions assigned"
        split = ", ".join(f"{topic} {n}" for topic, n in per_topic)
        return f"{sum(n for _, n in per_topic)} partitions assigned ({split})"


def first_fix(unresolved: str, problem: str) -> str:
    """Both problems, the unresolvable broker address first: nothing, not even `topics create`, gets through that
    broker until it is fixed (a broker restarted empty advertising such a name: /readyz named the missing topics
    only)."""
    return f"{unresolved}; fix that first (no topic can be created through it), then: {problem}"


def member_state(consumer: Any) -> Any:
    """kafka-python's group membership state of this member (None when the client has no coordinator)."""
    return getattr(getattr(consumer, "_coordinator", None), "state", None)  # noqa: SLF001 - no public accessor


def rebalancing(consumer: Any) -> bool:
    """Whether kafka-python reports this member in a rebalance (joined or joining, not yet synced)."""
    return str(member_state(consumer)) == "<rebalancing>"


def broker_connected(consumer: Any, rebalanced_s_ago: float = math.inf) -> bool:
    """Whether the group coordinator is known and heartbeats are recent (kafka-python's own state: the
    coordinator is forgotten within about a second of the connection dropping). Heartbeats pause during a
    rebalance, so their age says nothing then, nor until the first one after it: a known coordinator is enough
    while rebalancing, and `rebalanced_s_ago` (when the caller last saw a rebalance) counts as a heartbeat (a
    rebalance held up by another member read as "Kafka unreachable" after 12-20 s, and for ~3 s after it)."""
    try:
        coordinator = consumer._coordinator.coordinator_id  # noqa: SLF001 - no public accessor in 3.x
    except AttributeError:
        coordinator = True
    if coordinator is not None and rebalancing(consumer):
        return True
    try:
        metrics = consumer.metrics().get("consumer-coordinator-metrics", {})
        hb = float(metrics.get("last-heartbeat-seconds-ago", math.inf))
    except Exception:  # noqa: BLE001 - metrics disabled
        hb = math.inf
    return coordinator is not None and (math.isinf(hb) or min(hb, rebalanced_s_ago) < heartbeat_bound_s(consumer))


def heartbeat_bound_s(consumer: Any) -> float:
    """How old the last heartbeat may be before the coordinator counts as lost: twice the session timeout, at
    least 10 s (a loop gap longer than that lapses the membership: loop_gap.py)."""
    return max(2 * consumer.config.get("session_timeout_ms", 10000) / 1000.0, 10.0)


def coordinator_address(consumer: Any) -> tuple[str, int] | None:
    """(host, port) the metadata gives for the group coordinator kafka-python knows, None when it knows none."""
    try:
        node = consumer._coordinator.coordinator_id  # noqa: SLF001 - no public accessor in 3.x
        cluster = getattr(consumer, "_cluster", None) or consumer._client.cluster  # noqa: SLF001
        meta = cluster.broker_metadata(node) if node is not None else None
    except Exception:  # noqa: BLE001 - a stand-in or another kafka-python layout
        return None
    return None if meta is None else (str(meta.host), int(meta.port))


def membership_problem(consumer: Any, rebalanced_s_ago: float = math.inf) -> str | None:
    """Why this member is not working in its group now ("group coordinator unknown", "group membership
    <rebalancing>"), None when it is: kafka-python's own state (a stable member owning nothing is fine)."""
    if not broker_connected(consumer, rebalanced_s_ago):
        return "group coordinator unknown"
    state = member_state(consumer)
    if state is not None and str(state) != "<stable>":
        return f"group membership {state}"
    return None


class StallWatch:
    """Counts how long a problem has lasted without a break; `due` once it has lasted longer than `limit_s`.

    kafka-python 3 can stay out of its group for good after a broker reset (seen: a leader's SyncGroup lost
    while the coordinator was re-discovered; poll() then returns nothing forever): the cure is a new client."""

    def __init__(self, limit_s: float) -> None:
        self.limit_s = limit_s
        self.since: float | None = None

    def reset(self) -> None:
        self.since = None

    def lasted(self, now: float) -> float:
        return 0.0 if self.since is None else now - self.since

    def observe(self, problem: str | None, now: float) -> bool:
        """Record the current state; True when a problem has lasted longer than the limit."""
        if problem is None:
            self.since = None
            return False
        if self.since is None:
            self.since = now
        return now - self.since > self.limit_s


def describe_error(err: BaseException) -> str:
    """'KafkaTimeoutError: Unable to bootstrap …' without repeating the class name kafka-python already adds."""
    text = str(err).strip()
    name = type(err).__name__
    return text if text.startswith(name) else f"{name}: {text}" if text else name


_COUNTERS: weakref.WeakKeyDictionary[Any, PromCounter] = weakref.WeakKeyDictionary()


def consumed_counter(ops: OpsMetrics) -> PromCounter:
    """driftline_consumer_records_total{topic}: records stored by this process (one per OpsMetrics registry)."""
    key = ops.registry
    if key not in _COUNTERS:
        _COUNTERS[key] = PromCounter("driftline_consumer_records", "Kafka records consumed and stored by this "
                                     "process (dead letters included), by topic.", ["topic"], registry=ops.registry)
    return _COUNTERS[key]
