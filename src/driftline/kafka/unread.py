"""Partitions not read yet since their assignment, for the event-time alignment (alignment.py; a mixin of Aligning).

A positioned partition with records left whose next event time is unknown (never read: its estimate -inf) would
hold every event of a batch back. kafka-python's poll drains one partition's fetch before the next, so a backlog's
first batches often lack a partition: the whole batch used to be given back (sought back, paused) until that
partition was read, then fetched again (`run` ×1 on a 5-day backlog: 36-38k events/s instead of 44k). Now the
partitions read are paused and the unread ones polled alone (kafka-python 3 keeps the fetched data of a paused
partition buffered: nothing is fetched again) until each returned records or holds nothing back any more (at its
log end, or `stuck`); the batch is then cut with them. Only when that takes longer than about UNREAD_S, a
rebalance or stop comes, or the poll fails is the whole of it given back as before.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

from kafka.errors import KafkaError

from ..core.events import DeadLetter, decode
from . import partition_ops
from .batches import fresh_records

log = logging.getLogger("driftline.kafka.consumer")

UNREAD_POLLS, UNREAD_POLL_MS = 20, 50
"""The unread partitions are polled at most 20 times for at most 50 ms each (about a second: a few fetches)."""
UNREAD_RECORDS = 500
"""At least this many records (at most kafka.batch_max_records) are asked per poll of the unread partitions."""

Batch = dict[Any, list[Any]]


class ReadingUnread:
    """Reads the partitions not read yet before a batch is cut (state shared with LiveConsumer, declared below)."""

    consumer: Any
    align: Any
    expected: dict[Any, int]
    pending: set[Any]
    overlap: Any
    stop: Any
    handoff: Any
    settings: Any

    # provided by Aligning
    _holding: Callable[..., set[Any]]
    _positioned: Callable[[], list[Any]]

    def _read_unread(self, batch: Batch, now: float) -> Batch:
        """The fresh `batch` to store, with the first records of the partitions not read yet added (those already
        polled but carried to the next batch at kafka.batch_max_bytes: their first one; the others polled alone,
        the partitions read paused meanwhile); {} when it was given back instead (`_give_back_unread`)."""
        unread = self._unread(batch)
        if not unread:
            return batch
        merged = {tp: list(recs) for tp, recs in batch.items()}
        for tp in unread & set(self.overlap.carry):
            recs = fresh_records({tp: self.overlap.carry[tp]}, self.expected, self.pending).get(tp)
            if recs:  # its first record moves into this batch; the rest stays carried, in order, after it
                merged[tp], rest = recs[:1], recs[1:]
                if rest:
                    self.overlap.carry[tp] = rest
                else:
                    del self.overlap.carry[tp]
        unread = self._unread(merged)
        if not unread:
            return merged
        others = [tp for tp in self._positioned() if tp not in unread and tp not in self.align.waiting]
        partition_ops.pause(self.consumer, others)  # the running ones (those paused here are waiting)
        limit, failed = self.settings.batch_max_records, False
        try:
            for _ in range(UNREAD_POLLS):
                if not unread or self._interrupted():
                    break
                count = sum(map(len, merged.values()))
                polled = self.consumer.poll(timeout_ms=UNREAD_POLL_MS,
                                            max_records=max(limit - count, min(limit, UNREAD_RECORDS)))
                fresh = fresh_records(polled, self.expected, self.pending)
                for tp, recs in fresh.items():
                    merged.setdefault(tp, []).extend(recs)
                read = [tp for tp in fresh if tp not in others and tp not in self.align.waiting]
                partition_ops.pause(self.consumer, read)  # read now: the next polls are for the others alone
                others += read
                unread = self._unread(merged)
        except KafkaError as err:
            self.overlap.error, failed = err, True  # raised again by the next step's poll and handled there
        finally:
            partition_ops.resume(self.consumer, others)
        if unread or failed or self._interrupted():
            log.debug("event-time alignment: the batch is given back, %s not read yet (%s)",
                      sorted(map(str, unread)), "poll failed" if failed else "interrupted" if self._interrupted()
                      else f"nothing in {UNREAD_POLLS} polls")
            self._give_back_unread(merged, now)
            return {}
        log.debug("event-time alignment: %s not read yet read alone before cutting the batch",
                  sorted(map(str, set(merged) - set(batch))))
        return merged

    def _interrupted(self) -> bool:
        """A rebalance to apply first (the main loop applies it before any batch is stored), or stop."""
        return bool(self.stop.is_set() or (self.handoff is not None and self.handoff.pending()))

    def _unread(self, batch: Batch) -> set[Any]:
        """Partitions with records left, none in `batch`, not read since their assignment (estimate -inf)."""
        return {tp for tp in self._holding() - set(batch) if self.align.estimate(tp) == -math.inf}

    def _give_back_unread(self, batch: Batch, now: float) -> None:
        """Give the whole batch back without a transaction: each partition sought to its stored position and
        paused, its first event time kept as its estimate (`Aligning._align` resumes it once the others caught
        up); records of it carried to the next batch are dropped."""
        for tp, recs in batch.items():
            first = next((d.ts for d in (decode(r.value or b"", "", 0, r.offset) for r in recs)
                          if type(d) is not DeadLetter), -math.inf)
            self.align.waiting[tp] = min(first, now)
            self.overlap.carry.pop(tp, None)
            partition_ops.seek(self.consumer, tp, self.expected[tp])  # read again from the stored position
            partition_ops.pause(self.consumer, [tp])
        log.debug("event-time alignment: %d partitions wait for one not read yet", len(batch))
