"""Partitions not read yet since their assignment, for the event-time alignment (alignment.py; a mixin of Aligning).

A positioned partition with records left whose next event time is unknown (never read: its estimate -inf) would
hold every event of a batch back. kafka-python's poll drains one partition's fetch before the next, so a backlog's
first batches often lack a partition: the whole batch used to be given back (sought back, paused) until that
partition was read, and fetched again (5-day run_process_bench: 2 to 5 batches of up to 20,000 records). Now the
partitions read are paused and the unread ones polled alone (kafka-python keeps a paused partition's fetched data
buffered) until each returned records or holds nothing back any more (log end, `stuck`); the batch is then shared
out (`share`) so it still holds at most kafka.batch_max_records records and batch_max_bytes, every partition
keeping its first records: the rest is carried to the next batch, as the byte cut carries it (overlap.py), polled
once. Only when the unread ones do not deliver within UNREAD_POLLS polls, a rebalance or stop comes, or the poll
fails is the whole batch given back as before; a partition that never delivers (an open transaction under
read_committed) then costs one give-back, not one per step: the others wait paused until it is `stuck`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from itertools import accumulate
from typing import Any

from kafka.errors import KafkaError

from ..core.events import DeadLetter, decode
from . import partition_ops
from .batches import fresh_records, sizes

log = logging.getLogger("driftline.kafka.consumer")

UNREAD_POLLS, UNREAD_POLL_MS = 20, 50
"""The unread partitions are polled alone at most 20 times for at most 50 ms each (about a second: a few fetches)."""

Batch = dict[Any, list[Any]]


def share(batch: Batch, limit: int, max_bytes: int) -> tuple[Batch, Batch]:
    """(the first records of every partition, the rest): the most records per partition (the same cap for each, at
    least one) that keep the batch within `limit` records and `max_bytes` payload bytes, so a batch with partitions
    added stays as small as any other while holding each partition's first event; the room a common cap leaves
    goes one record more to the first partitions that have more (`_top_up`), so the batch holds exactly `limit`
    records when the bytes allow (a common cap alone stored 19,999 of 20,000: 2 × 9,974 + 51). Each partition's
    records stay in order, the rest starts where the kept ones end. With `limit` below the number of partitions (or
    a record larger than `max_bytes` allows) the one-record floor wins: every partition must be read before any is
    stored."""
    ends = {tp: list(accumulate(sizes(recs))) for tp, recs in batch.items() if recs}
    longest = max(map(len, ends.values()), default=0)

    def fits(cap: int) -> bool:
        count = sum(min(len(e), cap) for e in ends.values())
        return count <= limit and sum(e[min(len(e), cap) - 1] for e in ends.values()) <= max_bytes

    if fits(longest):
        return batch, {}
    lo, hi = 1, longest - 1  # the largest cap that fits (1 when none does: each partition progresses)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    caps = _top_up(ends, lo, limit, max_bytes)
    kept = {tp: recs[:caps[tp]] for tp, recs in batch.items() if recs}
    rest = {tp: recs[caps[tp]:] for tp, recs in batch.items() if len(recs) > caps.get(tp, len(recs))}
    return kept, rest


def _top_up(ends: dict[Any, list[int]], cap: int, limit: int, max_bytes: int) -> dict[Any, int]:
    """Records kept per partition: `cap` each (or all it has), plus one for each of the first partitions with more
    while the batch stays within `limit` records and `max_bytes` payload bytes (a larger record is passed over)."""
    caps = {tp: min(len(e), cap) for tp, e in ends.items()}
    count, size = sum(caps.values()), sum(e[caps[tp] - 1] for tp, e in ends.items())
    for tp, e in ends.items():
        if count >= limit:
            break
        if len(e) > cap and size + e[cap] - e[cap - 1] <= max_bytes:
            caps[tp], count, size = cap + 1, count + 1, size + e[cap] - e[cap - 1]
    return caps


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
    monotonic: Callable[[], float]

    # provided by Aligning
    _holding: Callable[..., set[Any]]
    _positioned: Callable[[], list[Any]]

    def _read_unread(self, batch: Batch, now: float) -> Batch:
        """The fresh `batch` to store, with the first records of the partitions not read yet added (those carried
        to the next batch, and those polled alone, the partitions read paused meanwhile) and shared out within the
        batch bounds (`share`, the rest carried); {} when it was given back instead (`_give_back_unread`)."""
        unread = self._unread(batch)
        if not unread:
            return batch
        merged = {tp: list(recs) for tp, recs in batch.items()}
        for tp in unread & set(self.overlap.carry):  # polled already, carried at kafka.batch_max_bytes
            recs = fresh_records({tp: self.overlap.carry.pop(tp)}, self.expected, self.pending).get(tp)
            if recs:
                merged[tp] = recs
        unread = self._unread(merged)
        failed = False
        if unread and not self._interrupted():
            unread, failed = self._poll_alone(merged, unread)
        if unread or failed or self._interrupted():
            log.debug("event-time alignment: the batch is given back, %s not read yet (%s)",
                      sorted(map(str, unread)), "poll failed" if failed else "interrupted" if self._interrupted()
                      else f"nothing in {UNREAD_POLLS} polls")
            self._give_back_unread(merged, now)
            return {}
        kept, rest = share(merged, self.settings.batch_max_records, self.settings.batch_max_bytes)
        self._carry(rest)
        log.debug("event-time alignment: %s not read yet read alone before cutting the batch (%d records carried "
                  "to the next one)", sorted(map(str, set(merged) - set(batch))), sum(map(len, rest.values())))
        return kept

    def _poll_alone(self, merged: Batch, unread: set[Any]) -> tuple[set[Any], bool]:
        """Poll the `unread` partitions alone (the running ones paused, each one read paused in turn), adding their
        records to `merged`; (those still unread, whether a poll failed). A failed poll's error is raised again by
        the next step's poll (overlap.error) and handled there."""
        others = [tp for tp in self._positioned() if tp not in unread and tp not in self.align.waiting]
        partition_ops.pause(self.consumer, others)  # the running ones (those paused here are waiting)
        limit = self.settings.batch_max_records
        try:
            for _ in range(UNREAD_POLLS):
                if not unread or self._interrupted():
                    break
                room = max(1, limit - sum(map(len, merged.values())), limit // (len(merged) + len(unread)))
                polled = self.consumer.poll(timeout_ms=UNREAD_POLL_MS, max_records=room)
                fresh = fresh_records(polled, self.expected, self.pending)
                for tp, recs in fresh.items():
                    merged.setdefault(tp, []).extend(recs)
                read = [tp for tp in fresh if tp not in others and tp not in self.align.waiting]
                partition_ops.pause(self.consumer, read)  # read now: the next polls are for the others alone
                others += read
                unread = self._unread(merged)
        except KafkaError as err:
            self.overlap.error = err
            return unread, True
        finally:
            partition_ops.resume(self.consumer, others)
        return unread, False

    def _carry(self, rest: Batch) -> None:
        """Records a batch was shared out before go to the next batch, ahead of those carried already (polled after
        them): positions are past them, nothing is fetched again."""
        if not rest:
            return
        carry = self.overlap.carry
        for tp, recs in rest.items():
            carry[tp] = recs + carry.get(tp, [])
        if self.overlap.carried_at is None:
            self.overlap.carried_at = self.monotonic()

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
