"""Producing to Kafka: the simulated stream (keyed by prediction_id, paced in wall time) and the dead-letter topic."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from ..core.events import DeadLetter, decode
from ..ingest.pipeline import MAX_FUTURE_S, RawRecord
from .settings import KafkaSettings

log = logging.getLogger(__name__)


def open_producer(settings: KafkaSettings, suffix: str = "-producer") -> Any:
    """A KafkaProducer (raises kafka.errors.KafkaTimeoutError when the broker cannot be reached)."""
    from kafka import KafkaProducer

    return KafkaProducer(**settings.producer_kwargs(suffix))


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


def dead_letters_in(records: Sequence[RawRecord], now: float) -> list[DeadLetter]:
    """The dead letters a batch produced (decode again: only called when the batch had some)."""
    out: list[DeadLetter] = []
    horizon = now + MAX_FUTURE_S
    for r in records:
        d = decode(r.payload, r.source, r.partition, r.offset, r.kind)
        if isinstance(d, DeadLetter):
            out.append(d)
        elif d.ts > horizon:
            out.append(DeadLetter("ts_in_future", f"ts {d.ts:.0f} is more than 1 day ahead of the clock",
                                  r.source, r.partition, r.offset, bytes(r.payload[:4096])))
    return out


class DeadLetterSink:
    """Copies dead letters to the optional dead-letter topic with reason/topic/partition/offset headers.

    Sent after the database transaction that recorded them (the database copy is authoritative); a copy can be
    repeated after a crash or lost when the broker stays away past the producer's delivery timeout.
    """

    def __init__(self, producer: Any, topic: str, flush_timeout_s: float = 5.0) -> None:
        self.producer, self.topic, self.flush_timeout_s = producer, topic, flush_timeout_s

    def send(self, letters: Sequence[DeadLetter], payloads: dict[tuple[str, int, int], bytes]) -> int:
        """Send each letter with its full original payload when known; returns how many were queued."""
        for d in letters:
            topic = d.source.split(":", 1)[1] if d.source.startswith("kafka:") else d.source
            headers = [("reason", d.reason.encode()), ("detail", d.detail.encode()[:1000]),
                       ("topic", topic.encode()), ("partition", str(d.partition).encode()),
                       ("offset", str(d.offset).encode())]
            value = d.raw if d.reason == "too_large" else payloads.get((d.source, d.partition, d.offset), d.raw)
            self.producer.send(self.topic, value=value, headers=headers)
        if letters:
            try:
                self.producer.flush(timeout=self.flush_timeout_s)
            except Exception as err:  # noqa: BLE001 - KafkaTimeoutError: keeps retrying in the background
                log.warning("dead-letter topic %s: flush not complete yet (%s); delivery continues in the "
                            "background", self.topic, err)
        return len(letters)

    def close(self) -> None:
        try:
            self.producer.close(timeout=5)
        except Exception as err:  # noqa: BLE001 - closing on shutdown
            log.warning("dead-letter producer close: %s", err)
