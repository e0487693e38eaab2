"""`simulate --kafka` holds at most MAX_PENDING unacknowledged records and stops sending at a delivery failure.

Reproduction (SRE tryout): tansu on 127.0.0.1:19092, `driftline topics create --kafka 127.0.0.1:19092 --partitions
2`, `driftline simulate --kafka 127.0.0.1:19092 --days 60 --per-day 20000 --seed 1`, `kill -KILL` tansu 3 s later:
kafka-python 3 keeps every record handed to send() in memory, so the simulator went on "sending" the whole 2.3 M-event
stream into the dead broker without a word (RSS 2.2 GB after 200 s), kept sending after the first records had
expired, and took ~30 s to exit after SIGTERM. Here a stand-in producer plays a broker that acknowledges nothing,
everything, or fails records; the counts come from produce_events' own callbacks.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Callable
from typing import Any

from kafka.errors import KafkaTimeoutError
from rich.console import Console

from driftline.commands.kafka_cmds import _produced
from driftline.config import Config
from driftline.context import Context
from driftline.kafka.producer import PENDING_CHECK_EVERY, ProduceReport, produce_events
from driftline.kafka.settings import KafkaSettings

SETTINGS = KafkaSettings(bootstrap="127.0.0.1:9")


class _Future:
    """The callbacks a record's future was given."""

    def __init__(self) -> None:
        self.ok: list[tuple[Callable[..., Any], tuple[Any, ...]]] = []
        self.err: list[tuple[Callable[..., Any], tuple[Any, ...]]] = []

    def add_callback(self, fn: Callable[..., Any], *args: Any) -> None:
        self.ok.append((fn, args))

    def add_errback(self, fn: Callable[..., Any], *args: Any) -> None:
        self.err.append((fn, args))


class _Producer:
    """send() queues a future; flush() lets `on_flush` acknowledge or fail the queued ones (or nothing)."""

    def __init__(self, on_flush: Callable[[_Producer], None]) -> None:
        self.queued: list[_Future] = []
        self.sent = 0
        self.flushes = 0
        self.most_queued = 0
        self.on_flush = on_flush

    def send(self, topic: str, key: bytes, value: bytes) -> _Future:
        self.sent += 1
        fut = _Future()
        self.queued.append(fut)
        self.most_queued = max(self.most_queued, len(self.queued))
        return fut

    def flush(self, timeout: float | None = None) -> None:
        self.flushes += 1
        self.on_flush(self)

    def ack_all(self) -> None:
        for fut in self.queued:
            for fn, args in fut.ok:
                fn(*args, None)
        self.queued.clear()

    def fail_all(self) -> None:
        for fut in self.queued:
            for fn, args in fut.err:
                fn(*args, KafkaTimeoutError("Expiring 1 record(s): 120000 ms has passed since batch creation"))
        self.queued.clear()


def _events(n: int) -> list[dict[str, Any]]:
    return [{"type": "prediction" if i % 2 else "outcome", "prediction_id": f"p{i}"} for i in range(n)]


def test_a_broker_that_acknowledges_nothing_holds_the_sender_at_max_pending() -> None:
    """Before the fix all 5,000 events were sent (and held in memory) before the first wait."""
    stop = threading.Event()
    told: list[int] = []

    def stalled(p: _Producer) -> None:
        if p.flushes == 3:
            stop.set()  # the operator's SIGTERM, after three slices of waiting

    producer = _Producer(stalled)
    report = produce_events(producer, SETTINGS, _events(5_000), stop=stop, stop_wait_s=0.0, max_pending=1_000,
                            on_full=told.append)
    assert 1_000 <= producer.sent < 1_000 + PENDING_CHECK_EVERY
    assert report.attempted == producer.sent and report.total == 0 and report.unconfirmed == producer.sent
    assert report.interrupted and not report.gave_up
    assert told == [producer.sent]  # said once, with the count waited on


def test_a_slow_broker_gets_every_event_with_never_more_than_the_bound_pending() -> None:
    told: list[int] = []

    def slow(p: _Producer) -> None:
        if p.flushes % 2 == 0:
            p.ack_all()  # every other slice acknowledges what is queued

    producer = _Producer(slow)
    report = produce_events(producer, SETTINGS, _events(5_000), max_pending=700, on_full=told.append)
    assert producer.sent == 5_000 and report.total == 5_000 and report.undelivered == 0
    assert producer.most_queued < 700 + PENDING_CHECK_EVERY
    assert told and all(n >= 700 for n in told)
    assert report.delivered == {"predictions": 2_500, "outcomes": 2_500}


def test_a_delivery_failure_stops_the_sending() -> None:
    """Before the fix the sender went on handing records to a broker that had already timed some out."""
    def failing(p: _Producer) -> None:
        p.fail_all()

    producer = _Producer(failing)
    report = produce_events(producer, SETTINGS, _events(5_000), max_pending=600)
    assert producer.sent < 600 + PENDING_CHECK_EVERY
    assert report.gave_up and not report.interrupted
    assert report.failed == producer.sent and report.total == 0


def test_after_a_failure_the_wait_for_the_rest_is_bounded() -> None:
    """kafka-python expired a dead broker's first records and left the rest pending (90 s later, still): the wait
    for them ends stop_wait_s after the failure. Before the fix it flushed until every record was settled."""
    now = [0.0]

    def clock() -> float:
        now[0] += 0.1
        return now[0]

    def first_fails(p: _Producer) -> None:
        assert p.flushes < 1_000, "the wait never ended"
        if p.flushes == 1:  # the oldest record expires; the others stay pending for good
            fn, args = p.queued.pop(0).err[0]
            fn(*args, KafkaTimeoutError("Expiring 1 record(s)"))

    told: list[int] = []
    producer = _Producer(first_fails)
    report = produce_events(producer, SETTINGS, _events(3_000), max_pending=500, stop_wait_s=5.0,
                            on_stop=told.append, clock=clock)
    assert report.gave_up and report.failed == 1 and report.unconfirmed == producer.sent - 1 > 0
    assert told == [producer.sent - 1]
    assert producer.flushes < 100


def test_the_summary_says_why_sending_stopped() -> None:
    err = io.StringIO()
    ctx = Context(config=Config(), db_url="sqlite://", console=Console(file=io.StringIO()),
                  err=Console(file=err, width=200))
    report = ProduceReport({"predictions": 900, "outcomes": 0}, {"predictions": 300, "outcomes": 0}, 600, 12.0,
                           gave_up=True)
    assert _produced(ctx, report) == 1
    text = " ".join(err.getvalue().split())
    assert "produced 300 of 900 events" in text and "stopped at a delivery failure" in text
    assert "600 events not delivered: 600 failed" in text
    err.truncate(0)
    report = ProduceReport({"predictions": 900, "outcomes": 0}, {"predictions": 300, "outcomes": 0}, 1, 12.0,
                           gave_up=True)
    assert _produced(ctx, report) == 1
    text = " ".join(err.getvalue().split())
    assert "1 failed, 599 unacknowledged when the wait ended (5s after the first delivery failure)" in text
