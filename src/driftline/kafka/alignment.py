"""Event-time alignment of the consumer's partitions (as Flink's watermark alignment, Kafka Streams' max.task.idle).

Catching up a backlog longer than labels.horizon, partitions are read at different speeds (fetch sizes, volumes,
the two topics), and the stored watermark (the newest event stored) would race ahead with the fastest one: events
of the slower ones older than watermark - horizon were dead-lettered past_horizon, and maintenance expired or
matured their predictions early. Here each positioned partition with data left has an estimate of its next event
time; nothing more than `bound` (kafka.align_within) ahead of the slowest one is stored: the records beyond it are
given back (the partition sought to the first of them and paused) and the partition is resumed once the others
caught up. Only a partition with records left beyond those being stored (a backlog) holds the others back: one at
its log end does not, whatever its event times (live outcomes stamped at their prediction's time trail the
predictions by weeks), and the slowest one is never paused, so the alignment cannot stall. Maintenance uses the
slowest partition's estimate as its watermark (`floor`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import groupby
from operator import attrgetter
from typing import Any

from ..core.events import DeadLetter, iso
from ..durations import format_duration
from ..ingest.pipeline import Defer
from . import partition_ops
from .assignment import source_of
from .unread import ReadingUnread

log = logging.getLogger("driftline.kafka.consumer")

IDLE_S = 30.0
"""A partition with records left whose position has not moved for this long holds no other back (`stuck`)."""
TELL_EVERY_S = 60.0
"""At most one INFO line a minute about partitions waiting for a slower one."""
UNSEEN = object()
"""Alignment.unfetched: the partition's high-water mark is taken at its first look."""
Key = tuple[str, int]
"""(source, partition) as the pipeline names a partition."""
_SOURCE, _PARTITION, _TS = attrgetter("source"), attrgetter("partition"), attrgetter("ts")


@dataclass(slots=True)
class Cut:
    """What `cut` decided for one batch: the first record given back per partition (offset, its event time) and
    the newest event time stored per partition (capped at the clock)."""

    deferred: dict[Key, tuple[int, float]] = field(default_factory=dict)
    reached: dict[Key, float] = field(default_factory=dict)


def _runs(records: Sequence[Any]) -> list[tuple[Key, int, int]]:
    """(partition, start, end) of each run of consecutive records of one partition (the consumer builds a batch
    partition by partition: one run each). Each run counted at C level (`len(list(group))`): a generator over its
    records was 1 % of the store thread's time on a 0.5 M-event backlog (py-spy)."""
    out, at = [], 0
    for key, group in groupby(zip(map(_SOURCE, records), map(_PARTITION, records))):
        n = len(list(group))
        out.append((key, at, at + n))
        at += n
    return out


def cut(records: Sequence[Any], decoded: Sequence[Any], others: float, bound: float, now: float,
        out: Cut, left: Container[Key] | None = None) -> list[bool] | None:
    """Which records of a batch to store (None: all): per partition, those before its first event later than
    `floor + bound`, where floor is the earliest of `others` (the estimate of the positioned partitions with data
    that are not in the batch) and the first event time of each batch partition with records `left` beyond the
    batch (None: every one). A partition this batch takes to its log end bounds nobody: nothing of it is left to
    fall past the horizon (live outcomes stamped weeks behind the predictions are not a backlog). The partition
    holding the floor keeps its first event, so the slowest partition always progresses. Event times are capped at
    `now` (an event stamped ahead of the clock holds nothing back). Fills `out`. A pass of C-level maps over the
    batch, a Python loop only over a partition that is cut."""
    letters = DeadLetter in set(map(type, decoded))
    if letters:
        times: list[float | None] = [None if type(d) is DeadLetter else min(d.ts, now) for d in decoded]
    else:
        times = list(map(_TS, decoded))
        if times and max(times) > now:  # type: ignore[type-var]
            times = [min(t, now) for t in times]  # type: ignore[type-var]
    runs = [(key, a, b, [t for t in times[a:b] if t is not None] if letters else times[a:b])
            for key, a, b in _runs(records)]
    firsts: dict[Key, float] = {}
    for key, _, _, ts in runs:
        if ts and (left is None or key in left):
            firsts.setdefault(key, ts[0])
    limit = min(others, *firsts.values()) + bound if firsts else others + bound
    if all(not ts or max(ts) <= limit for *_, ts in runs):
        for key, _, _, ts in runs:
            if ts:
                out.reached[key] = max(max(ts), out.reached.get(key, -math.inf))
        return None
    keep = [True] * len(times)
    for key, a, b, ts in runs:
        if key in out.deferred:  # a later run of a partition already cut
            keep[a:b] = [False] * (b - a)
            continue
        if ts and max(ts) > limit:
            at = next(i for i in range(a, b) if times[i] is not None and times[i] > limit)  # type: ignore[operator]
            out.deferred[key] = (records[at].offset, times[at])  # type: ignore[assignment]
            keep[at:b] = [False] * (b - at)
            ts = [t for t in times[a:at] if t is not None]
        if ts:
            out.reached[key] = max(max(ts), out.reached.get(key, -math.inf))
    return keep


class Alignment:
    """Per-partition event-time estimates and the partitions paused for being ahead (the caller pauses/resumes)."""

    def __init__(self, bound: float) -> None:
        self.bound = bound
        self.reached: dict[Any, float] = {}
        """Newest event time stored per partition (its next event is expected at or after it)."""
        self.waiting: dict[Any, float] = {}
        """Partitions paused for being ahead → the event time of the first record given back."""
        self.told, self.told_at = False, -math.inf
        """Whether the log last said partitions wait, and when (monotonic; see Aligning._tell)."""
        self.progress: dict[Any, tuple[int, float]] = {}
        """Partition → (its position, since when (monotonic) it has been there while not waiting)."""
        self.backlog: set[Any] = set()
        """Partitions that had records left beyond the last batch when it was cut (see Aligning._holding)."""
        self.unfetched: dict[Any, Any] = {}
        """Partitions positioned or resumed (not fetched while paused) → their fetched high-water mark then
        (UNSEEN: not looked at yet): until a fetch moves it, the end asked from the broker counts as well."""

    def forget(self, tps: Iterable[Any]) -> None:
        """Partitions revoked, or to be positioned again (their pause is no longer ours)."""
        for tp in tps:
            self.reached.pop(tp, None)
            self.waiting.pop(tp, None)
            self.progress.pop(tp, None)
            self.backlog.discard(tp)
            self.unfetched[tp] = UNSEEN  # positioned again next (or revoked: dropped by Aligning._align)

    def stuck(self, tp: Any, position: int, now: float) -> bool:
        """Whether a running partition's position has not moved for IDLE_S (records it cannot deliver: an open
        transaction under read_committed): it then holds nobody back (Flink's idleness, Kafka Streams'
        max.task.idle), so no partition can stall the others for longer than that."""
        seen = self.progress.get(tp)
        if seen is None or seen[0] != position or tp in self.waiting:
            self.progress[tp] = (position, now)
            return False
        return now - seen[1] > IDLE_S

    def estimate(self, tp: Any) -> float:
        """The event time a partition's next record is expected at (-inf: none read yet)."""
        return self.waiting.get(tp, self.reached.get(tp, -math.inf))

    def floor(self, holding: Iterable[Any]) -> float:
        """The slowest estimate among the partitions still holding data (+inf when none does)."""
        return min((self.estimate(tp) for tp in holding), default=math.inf)

    def stored(self, tp_of: Callable[[Key], Any], result: Cut) -> None:
        """Take a stored batch's `Cut`: newer estimates, and the partitions given back now wait."""
        for key, ts in result.reached.items():
            tp = tp_of(key)
            self.reached[tp] = max(ts, self.reached.get(tp, -math.inf))
        for key, (_, ts) in result.deferred.items():
            self.waiting[tp_of(key)] = ts

    def moves(self, holding: set[Any], running: Iterable[Any]) -> tuple[set[Any], set[Any]]:
        """(partitions to pause, partitions to resume): a running partition whose stored events are more than the
        bound ahead of the slowest one is paused (its next records would only be given back), a waiting one whose
        next record is within the bound is resumed."""
        limit = self.floor(holding) + self.bound
        resume = {tp for tp, ts in self.waiting.items() if ts <= limit}
        for tp in resume:
            del self.waiting[tp]
        pause = {tp for tp in running if tp not in self.waiting and self.reached.get(tp, -math.inf) > limit}
        for tp in pause:
            self.waiting[tp] = self.reached[tp]
        return pause, resume


class Aligning(ReadingUnread):
    """The live consumer's side of the alignment (a mixin of LiveConsumer): which partitions hold data, the cut of a
    batch, giving records back, pausing and resuming (partitions not read yet: unread.py)."""

    consumer: Any
    align: Alignment
    expected: dict[Any, int]
    pending: set[Any]
    unresolved: dict[Any, str]
    log_ends: dict[Any, int]
    owned: set[Any]
    overlap: Any
    held: Any
    monotonic: Callable[[], float]

    def _positioned(self) -> list[Any]:
        return [tp for tp in self.expected if tp not in self.pending and tp not in self.unresolved]

    def _holding(self, batch: dict[Any, list[Any]] | None = None, carried: bool = False) -> set[Any]:
        """Positioned partitions with records left to read (or given back): those that hold the others back (not
        one whose position is stuck, see `Alignment.stuck`). Records of `batch` (about to be stored) count as read;
        with `carried`, so do the records polled since the last batch was cut (the overlap's carry) of a partition
        that had none left beyond that batch: they arrived since, as live records do, and hold nobody back (a live
        outcomes partition stamped weeks behind the predictions is then never a backlog)."""
        out = set()
        now = self.monotonic()
        carry = self.overlap.carry if carried else {}
        for tp in self._positioned():
            if self.align.stuck(tp, self.expected[tp], now):
                continue
            if tp in self.align.waiting and not (batch and tp in batch):
                out.add(tp)
                continue
            read = self.expected[tp]
            for recs in (batch.get(tp) if batch else None,
                         carry.get(tp) if tp not in self.align.backlog else None):
                if recs:
                    read = max(read, recs[-1].offset + 1)
            polled = bool((batch and batch.get(tp)) or carry.get(tp))
            if polled:  # fetched since it was positioned or resumed: its fetch's high-water mark is the fresh end
                self.align.unfetched.pop(tp, None)
            end = self._known_end(tp)
            if end is None or read < end:
                out.add(tp)
        return out

    def _known_end(self, tp: Any) -> int | None:
        """The log end the last fetch of `tp` reported (records written since are live arrivals, not a backlog: a
        lag refresh that sees them must not make a live partition a backlog every 5 s); the larger of it and the
        end asked from the broker (at positioning, or the lag refresh) while the partition has not been fetched
        since it was positioned or resumed (records written while it was paused are a backlog)."""
        hw, asked = partition_ops.highwater(self.consumer, tp), self.log_ends.get(tp)
        if tp in self.align.unfetched:
            then = self.align.unfetched[tp]
            if then is UNSEEN:
                then = self.align.unfetched[tp] = hw
            if hw is None or hw == then:
                return max((e for e in (hw, asked) if e is not None), default=None)
            del self.align.unfetched[tp]  # fetched since: its high-water mark is the fresher end
        return hw if hw is not None else asked

    def _resumed(self, tps: Iterable[Any]) -> None:
        """Partitions resumed after a pause: their high-water mark is stale until a fetch moves it."""
        for tp in tps:
            self.align.unfetched[tp] = partition_ops.highwater(self.consumer, tp)

    def _cutter(self, batch: dict[Any, list[Any]], now: float) -> tuple[Defer, Cut]:
        """The `defer` of a batch's transaction (see `cut`) and the `Cut` it fills: only partitions with records
        left beyond the batch (a backlog) bound the others."""
        holding = self._holding(batch)
        self.align.backlog = holding
        others = self.align.floor(holding - set(batch))
        left = {(source_of(tp.topic), tp.partition) for tp in holding & set(batch)}
        found = Cut()
        bound = self.align.bound
        return (lambda records, decoded: cut(records, decoded, others, bound, now, found, left)), found

    def _give_back(self, batch: dict[Any, list[Any]], found: Cut) -> None:
        """After the batch is stored: the records it gave back are read again from the first of them (sought there,
        the partition paused; records polled meanwhile dropped), and the estimates move on."""
        tps = {(source_of(tp.topic), tp.partition): tp for tp in batch}
        self.align.stored(tps.__getitem__, found)
        for key, (offset, _) in found.deferred.items():
            tp = tps[key]
            self.expected[tp] = offset
            self.overlap.carry.pop(tp, None)
            partition_ops.seek(self.consumer, tp, offset)
            partition_ops.pause(self.consumer, [tp])

    def _align(self) -> None:
        """Pause the partitions too far ahead, resume the ones the others caught up with (not while a batch is held:
        every partition is paused then and `_release_held` resumes the ones not waiting here)."""
        if self.held is not None:
            return
        positioned = self._positioned()
        self.align.forget([tp for tp in list(self.align.waiting) if tp not in self.expected])
        for tp in [tp for tp in self.align.unfetched if tp not in self.owned]:
            del self.align.unfetched[tp]
        holding = self._holding(carried=True)
        pause, resume = self.align.moves(holding, [tp for tp in positioned if tp not in self.align.waiting])
        if pause:
            partition_ops.pause(self.consumer, pause)
        if resume:
            partition_ops.resume(self.consumer, resume)
            self._resumed(resume)
        if pause or resume:
            log.debug("event-time alignment (kafka.align_within %gs): paused %s, resumed %s", self.align.bound,
                      sorted(map(str, pause)), sorted(map(str, resume)))
        self._tell(holding)

    def _tell(self, holding: set[Any]) -> None:
        """One INFO line when partitions start or stop waiting for a slower one, at most one a minute (a backlog
        pauses and resumes partitions batch after batch): why their lag grows while others catch up."""
        waiting, now = bool(self.align.waiting), self.monotonic()
        if waiting == self.align.told or now - self.align.told_at < TELL_EVERY_S:
            return
        self.align.told, self.align.told_at = waiting, now
        if not waiting:
            log.info("event-time alignment: no partition waits for a slower one any more")
            return
        slow = min(holding, key=self.align.estimate, default=None)
        at = "" if slow is None or not math.isfinite(self.align.estimate(slow)) else \
            f" at {iso(self.align.estimate(slow))}"
        name = "" if slow is None else f" ({slow.topic}[{slow.partition}]{at})"
        log.info("event-time alignment: %d partitions paused, more than kafka.align_within (%s) ahead of the slowest "
                 "partition with records left%s; they resume as it catches up (their lag grows meanwhile)",
                 len(self.align.waiting), format_duration(self.align.bound), name)

    def _maintenance_ceiling(self) -> float:
        """The watermark maintenance may use: the slowest estimate among the partitions with data (+inf: none)."""
        return self.align.floor(self._holding(carried=True))
