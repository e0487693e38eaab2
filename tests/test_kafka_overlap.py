"""kafka/overlap.py: a batch stored in the worker thread while the main thread polls; what was polled is carried,
a poll error gives the records back (seek) and is raised again at the next step, the worker's error is raised after
polling stopped, and polling stops at the record limit or when told to."""

from __future__ import annotations

import threading
from collections import namedtuple
from typing import Any

import pytest
from kafka.errors import KafkaError

from driftline.kafka.overlap import Overlap

Rec = namedtuple("Rec", "offset value")


class Polls:
    """A poll() handing out `per` records of one partition per call, optionally failing at call `fail_at`."""

    def __init__(self, per: int = 3, fail_at: int | None = None) -> None:
        self.next, self.per, self.calls, self.fail_at = 0, per, 0, fail_at
        self.seeks: list[tuple[str, int]] = []

    def poll(self, timeout_ms: int, max_records: int) -> dict[str, list[Rec]]:
        self.calls += 1
        if self.calls == self.fail_at:
            raise KafkaError("broker away")
        n = min(self.per, max_records)
        out = [Rec(self.next + i, b"v") for i in range(n)]
        self.next += n
        return {"tp": out}

    def seek(self, tp: str, offset: int) -> None:
        self.seeks.append((tp, offset))
        self.next = offset


def test_records_polled_while_storing_are_carried_up_to_the_limit() -> None:
    ov, polls, release = Overlap(), Polls(), threading.Event()

    def work() -> str:
        release.wait(5)
        return "stored"

    timer = threading.Timer(0.3, release.set)
    timer.start()
    result, seconds = ov.store(work, polls.poll, 10, lambda: True, polls.seek)
    ov.close()
    assert result == "stored" and seconds >= 0
    assert ov.carried_at is not None  # when the first carried records were polled: the next linger counts from it
    carry, error = ov.take()
    assert error is None and [r.offset for r in carry["tp"]] == list(range(10))  # stopped at the limit
    assert ov.take() == ({}, None) and ov.carried_at is None


def test_a_poll_error_gives_the_records_back_and_is_kept_for_the_next_step() -> None:
    ov, polls, release = Overlap(), Polls(fail_at=3), threading.Event()
    threading.Timer(0.3, release.set).start()
    result, _ = ov.store(lambda: release.wait(5) and 7, polls.poll, 100, lambda: True, polls.seek)
    ov.close()
    carry, error = ov.take()
    assert result == 7 and carry == {} and isinstance(error, KafkaError)
    assert polls.seeks == [("tp", 0)]  # the consumer reads the carried records again


def test_the_workers_error_is_raised_and_polling_obeys_keep_polling() -> None:
    ov, polls = Overlap(), Polls()

    def fail() -> None:
        raise RuntimeError("database")

    with pytest.raises(RuntimeError, match="database"):
        ov.store(fail, polls.poll, 100, lambda: False, polls.seek)
    ov.close()
    assert polls.calls == 0 and ov.take() == ({}, None)


def test_an_unexpected_poll_error_waits_for_the_transaction() -> None:
    ov, done = Overlap(), threading.Event()

    def work() -> None:
        threading.Event().wait(0.2)
        done.set()

    def poll(**_: Any) -> dict[str, list[Rec]]:
        raise ValueError("bug")

    with pytest.raises(ValueError):
        ov.store(work, poll, 100, lambda: True, lambda tp, off: None)
    assert done.is_set()
    ov.close()


def test_polling_while_storing_stops_at_max_bytes_counting_the_records_kept_for_the_next_batch() -> None:
    """Records a batch was cut before (kafka.batch_max_bytes) are carried first; polling meanwhile stops once the
    carried payload bytes reach the bound, not only at the record limit."""
    ov, polls, release = Overlap(), Polls(per=3), threading.Event()
    ov.keep({"tp": [Rec(0, b"v" * 10)], "empty": []}, since=1.5)
    assert ov.carried_at == 1.5 and list(ov.carry) == ["tp"]
    polls.next = 1
    timer = threading.Timer(0.5, release.set)
    timer.start()
    ov.store(lambda: release.wait(5), polls.poll, 1000, lambda: True, polls.seek, max_bytes=16)
    ov.close()
    carry, _ = ov.take()
    assert [r.offset for r in carry["tp"]] == [0, 1, 2, 3, 4, 5, 6] and polls.calls == 2  # 10 + 3 + 3 bytes
