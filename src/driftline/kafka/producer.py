"""Producing the simulated stream to Kafka (keyed by prediction_id, paced in wall time)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import msgspec

from .settings import KafkaSettings

log = logging.getLogger(__name__)


def open_producer(settings: KafkaSettings, suffix: str = "-producer") -> Any:
    """A KafkaProducer (raises kafka.errors.KafkaTimeoutError when the broker cannot be reached)."""
    from kafka import KafkaProducer

    from .topic_watch import honour_auto_create

    kwargs = settings.producer_kwargs(suffix)
    return honour_auto_create(KafkaProducer(**kwargs), bool(kwargs.get("allow_auto_create_topics")))


@dataclass
class ProduceReport:
    """What a produce run did: events per topic, delivery failures, wall time."""

    sent: dict[str, int]
    failed: int
    seconds: float

    @property
    def total(self) -> int:
        return sum(self.sent.values())


class Pacer:
    """Holds a producer to `rate` events per second of wall time (None: as fast as possible)."""

    def __init__(self, rate: float | None, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Any] = time.sleep) -> None:
        if rate is not None and rate <= 0:
            raise ValueError("rate must be positive")
        self.rate, self.clock, self.sleep = rate, clock, sleep
        self.start: float | None = None
        self.n = 0

    def wait(self) -> None:
        """Block until the next event is due."""
        if self.rate is None:
            return
        now = self.clock()
        if self.start is None:
            self.start = now
        due = self.start + self.n / self.rate
        if due > now:
            self.sleep(due - now)
        self.n += 1


def produce_events(producer: Any, settings: KafkaSettings, events: Iterable[dict[str, Any]],
                   rate: float | None = None, stop: threading.Event | None = None,
                   pacer: Pacer | None = None) -> ProduceReport:
    """Send events to the predictions/outcomes topic by type, keyed by prediction_id, then flush.

    Kafka record timestamps are left to the broker (produce time): event times travel in the payload, so old
    simulated events are not deleted at once by time-based retention.
    """
    enc = msgspec.json.Encoder()
    pacer = pacer or Pacer(rate)
    sent = {t: 0 for t in settings.topics}
    failed = [0]
    lock = threading.Lock()

    def on_error(exc: BaseException) -> None:
        with lock:
            failed[0] += 1
            if failed[0] <= 3:
                log.error("delivery failed: %s", exc)

    t0 = time.perf_counter()
    for ev in events:
        if stop is not None and stop.is_set():
            break
        pacer.wait()
        topic = settings.predictions_topic if ev.get("type") == "prediction" else settings.outcomes_topic
        fut = producer.send(topic, key=str(ev["prediction_id"]).encode(), value=enc.encode(ev))
        fut.add_errback(on_error)
        sent[topic] += 1
    producer.flush()
    return ProduceReport(sent, failed[0], time.perf_counter() - t0)
