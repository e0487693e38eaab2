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


MAX_PENDING = 50_000
"""Records handed to the producer and not yet acknowledged or failed, at most: past it produce_events waits for the
broker before sending more. kafka-python 3 keeps every record given to send() in memory (it has no buffer_memory
bound), so with the broker gone a run grew to 2.2 GB in 200 s and took ~30 s to exit (SRE tryout); 50,000 simulated
records are ~15 MB."""
PENDING_CHECK_EVERY = 256
"""Events sent between two looks at the pending count (each look takes the callbacks' lock)."""

STOP_WAIT_S = 5.0
"""Seconds an interrupted run waits for the broker to acknowledge the records already sent (then it reports them
as not delivered): kafka-python's own close waits up to its delivery timeout, 120 s by default, per unacknowledged
batch (SRE tryout: a SIGTERM did not stop `simulate --kafka` for over 60 s with the broker gone)."""


@dataclass
class ProduceReport:
    """What a produce run did: events sent and acknowledged per topic, delivery failures, wall time, whether a
    stop signal cut the stream short. `delivered` counts only acknowledged records: the records a broker never
    acknowledged were counted as produced (SRE tryout: 2,580 reported with ~1,500 sent after the broker died)."""

    sent: dict[str, int]
    delivered: dict[str, int]
    failed: int
    seconds: float
    interrupted: bool = False
    gave_up: bool = False
    """Whether producing stopped at a delivery failure (every later record would have waited out the same delivery
    timeout into a broker that does not take them)."""

    @property
    def total(self) -> int:
        """Records the broker acknowledged."""
        return sum(self.delivered.values())

    @property
    def attempted(self) -> int:
        """Records handed to the producer."""
        return sum(self.sent.values())

    @property
    def unconfirmed(self) -> int:
        """Records neither acknowledged nor failed when the run stopped waiting (the broker may have them or not)."""
        return self.attempted - self.total - self.failed

    @property
    def undelivered(self) -> int:
        """Records not known to be delivered: failed or unconfirmed."""
        return self.attempted - self.total


class Deliveries:
    """Acknowledgements and failures of the records sent, counted by callbacks on the producer's I/O thread."""

    def __init__(self, topics: Iterable[str]) -> None:
        self.sent = {t: 0 for t in topics}
        self.delivered = {t: 0 for t in self.sent}
        self.failed = 0
        self.lock = threading.Lock()
        self.frozen = False

    def acknowledged(self, topic: str, _metadata: Any) -> None:
        """Success callback of one record."""
        with self.lock:
            if not self.frozen:
                self.delivered[topic] += 1

    def failure(self, exc: BaseException) -> None:
        """Error callback of one record; the first three are logged."""
        with self.lock:
            if self.frozen:
                return  # aborted by the close after the report: already counted as unconfirmed
            self.failed += 1
            if self.failed <= 3:
                log.error("delivery failed: %s", exc)

    def pending(self) -> int:
        """Records sent and not yet acknowledged or failed."""
        with self.lock:
            return sum(self.sent.values()) - sum(self.delivered.values()) - self.failed

    def report(self, seconds: float, interrupted: bool, gave_up: bool = False) -> ProduceReport:
        """The counts as they stand; later callbacks (records aborted by closing the producer) change nothing."""
        with self.lock:
            self.frozen = True
            return ProduceReport(dict(self.sent), dict(self.delivered), self.failed, seconds, interrupted,
                                 gave_up)


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
                   pacer: Pacer | None = None, stop_wait_s: float = STOP_WAIT_S,
                   on_stop: Callable[[int], Any] | None = None, max_pending: int = MAX_PENDING,
                   on_full: Callable[[int], Any] | None = None,
                   clock: Callable[[], float] = time.monotonic) -> ProduceReport:
    """Send events to the predictions/outcomes topic by type, keyed by prediction_id, then wait for the broker's
    acknowledgements: until every record is acknowledged or failed, or, once `stop` is set or a record failed, at
    most `stop_wait_s` more seconds (`on_stop` is told how many records are still waited for).

    At most `max_pending` records are ever unacknowledged: past it, sending waits until half of them are
    acknowledged (`on_full` is told the count, once per wait). A delivery failure stops the sending (the report's
    `gave_up`): the broker has refused or timed out a record, and every later one would wait out the same timeout.

    Kafka record timestamps are left to the broker (produce time): event times travel in the payload, so old
    simulated events are not deleted at once by time-based retention.
    """
    enc = msgspec.json.Encoder()
    pacer = pacer or Pacer(rate)
    counts = Deliveries(settings.topics)
    t0 = clock()
    gave_up = False
    for i, ev in enumerate(events):
        if stop is not None and stop.is_set():
            break
        if not i % PENDING_CHECK_EVERY and not _room(producer, counts, stop, max_pending, on_full):
            gave_up = counts.failed > 0
            break
        pacer.wait()
        topic = settings.predictions_topic if ev.get("type") == "prediction" else settings.outcomes_topic
        fut = producer.send(topic, key=str(ev["prediction_id"]).encode(), value=enc.encode(ev))
        with counts.lock:
            counts.sent[topic] += 1
        fut.add_callback(counts.acknowledged, topic)
        fut.add_errback(counts.failure)
    interrupted = _await_acks(producer, counts, stop, stop_wait_s, on_stop, clock)
    return counts.report(clock() - t0, interrupted, gave_up)


def _room(producer: Any, counts: Deliveries, stop: threading.Event | None, max_pending: int,
          on_full: Callable[[int], Any] | None) -> bool:
    """Whether to go on sending: False once a record has failed or `stop` is set; while `max_pending` records or
    more are unacknowledged, waits (in flush slices) until at most half of them are."""
    from kafka.errors import KafkaTimeoutError

    told = False
    while not counts.failed and not (stop is not None and stop.is_set()):
        pending = counts.pending()
        if pending < (max_pending if not told else max(1, max_pending // 2)):
            return True
        if not told and on_full is not None:
            on_full(pending)
        told = True
        try:
            producer.flush(timeout=0.25)
        except KafkaTimeoutError:
            pass
    return False


def _await_acks(producer: Any, counts: Deliveries, stop: threading.Event | None, stop_wait_s: float,
                on_stop: Callable[[int], Any] | None, clock: Callable[[], float] = time.monotonic) -> bool:
    """Flush in slices until nothing is pending; once `stop` is set or a record failed, for at most `stop_wait_s`
    more seconds (an unbounded flush outlived SIGTERM with the broker gone; after kafka-python expired a dead
    broker's first records, the rest were still pending 90 s later). Returns whether `stop` was set."""
    from kafka.errors import KafkaTimeoutError

    deadline: float | None = None
    while counts.pending():
        now = clock()
        if deadline is None and (counts.failed or stop is not None and stop.is_set()):
            deadline = now + stop_wait_s
            if on_stop is not None:
                on_stop(counts.pending())
        left = 0.25 if deadline is None else min(0.25, deadline - now)
        if left <= 0:
            break
        try:
            producer.flush(timeout=left)  # its timeout bounds each batch's wait, not the call's: hence the slices
        except KafkaTimeoutError:
            pass
    return stop is not None and stop.is_set()


def close_producer(producer: Any, timeout: float = 1.0) -> None:
    """Close `producer` without waiting for records still unacknowledged (produce_events reported them): its close
    flushes first and raises KafkaTimeoutError when any remain, leaving the I/O thread sending and `__del__` to flush
    again. kafka-python has no public abort, so the I/O thread is force-closed (failing those records) first."""
    from kafka.errors import KafkaTimeoutError

    try:
        producer.close(timeout=timeout)
    except KafkaTimeoutError:
        sender = getattr(producer, "_sender", None)
        if sender is not None:
            sender.force_close()
            sender.join(1.0)
        try:
            producer.close(timeout=0)
        except KafkaTimeoutError:
            pass  # the I/O thread is a daemon: it ends with the process
