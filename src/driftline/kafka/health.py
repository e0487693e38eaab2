"""Consumer health: backoff, the status /readyz reports, broker connectivity and the per-topic records counter."""

from __future__ import annotations

import math
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import Counter as PromCounter

from ..ops import OpsMetrics


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
    since: float = field(default_factory=time.monotonic)
    assigned: int = 0
    lag: int | None = None
    error: str = ""


def broker_connected(consumer: Any) -> bool:
    """Whether the group coordinator is known and heartbeats are recent (kafka-python's own state: the
    coordinator is forgotten within about a second of the connection dropping)."""
    try:
        coordinator = consumer._coordinator.coordinator_id  # noqa: SLF001 - no public accessor in 3.x
    except AttributeError:
        coordinator = True
    try:
        metrics = consumer.metrics().get("consumer-coordinator-metrics", {})
        hb = float(metrics.get("last-heartbeat-seconds-ago", math.inf))
    except Exception:  # noqa: BLE001 - metrics disabled
        hb = math.inf
    session_s = consumer.config.get("session_timeout_ms", 10000) / 1000.0
    return coordinator is not None and (math.isinf(hb) or hb < max(2 * session_s, 10.0))


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
