"""What an offset reset skips (resets.py decides where a partition resumes; this says what that costs, in records).

Knowable, per partition, when a stored position `stored` is found outside the log found (start..end) and the
partition resumes at `target`:
- `found`: records of the log found that resuming passes over unread — exact. Retention (`before_start`): target −
  stored (deleted before they were read, plus the log jumped by `latest`); a reset or replaced log: target − start
  (0 under `earliest`, the whole new log under `latest`).
- `previous`: records of the reset or replaced log after the stored position, never ingested: that log's end as
  this process last saw it while it consumed the partition (the lag refresh, about once a second between
  batches), − stored. Known only when this process watched that log before the reset (not after a restart, unless
  it recorded the problem under `fail`). A lower bound when records arrived after the last refresh (a main loop
  held up by a long store, e.g. waiting for the database lock, refreshes rarely; a broker whose end offset lags,
  as tansu's does, by up to a batch); an upper bound if the new log had already grown past the old end before the
  reset was noticed. Moving back to a shorter log under
  `earliest` re-reads from its start: whether those are old records again (deduplicated by id) or new ones, offsets
  cannot tell, so nothing is counted for them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kafka import TopicPartition

from .resets import Problem


@dataclass(frozen=True)
class Skipped:
    """Records skipped by one reset: of the log found (exact) and of the previous log (None: unknown)."""

    found: int
    previous: int | None

    def of_previous(self, old_end: int | None) -> str:
        """'100757 of the previous log (never ingested: its end was 160534 when last seen)', or unknown."""
        if self.previous is None:
            return "unknown of the previous log (this process had not seen its end)"
        return f"{self.previous} of the previous log (never ingested: its end was {old_end} when last seen)"

    def describe(self, old_end: int | None) -> str:
        """'records skipped: 0 of the log found, 100757 of the previous log (…)' for the reset's log line."""
        return f"records skipped: {self.found} of the log found, {self.of_previous(old_end)}"


def skipped(problem: Problem, target: int) -> Skipped:
    """What resuming at `target` after `problem` skips (see the module docstring)."""
    if problem.kind == "before_start":
        return Skipped(max(0, target - problem.stored), 0)
    previous = None if problem.old_end is None else max(0, problem.old_end - problem.stored)
    return Skipped(max(0, target - problem.start), previous)


@dataclass
class EndsSeen:
    """Per partition: (this process's position, the highest log end seen and known to be of its log) since it
    positioned the partition, so an offset reset can say how much of the old log was never ingested (updated from
    the lag refreshes).

    Where the partition's topic id is known, an end seen counts only once a topic-id read made after it shows the
    same log (`confirm`): kafka-python fetches by topic name, so a process stopped (SIGSTOP, a paused VM) while
    the broker restarted empty and the topics were recreated and refilled saw the new logs' ends first and
    reported them as the old ones' (SRE tryout: '998 of the previous log (never ingested …)' with nothing lost)."""

    seen: dict[TopicPartition, tuple[int, int]] = field(default_factory=dict)
    unconfirmed: dict[TopicPartition, int] = field(default_factory=dict)
    """Per partition: the highest end seen since the last topic-id read that showed the same log."""

    def restart(self, tp: TopicPartition, position: int, end: int) -> None:
        """The partition was (re)positioned in the log as it is now (its topic id just read)."""
        self.seen[tp] = (position, end)
        self.unconfirmed.pop(tp, None)

    def observe(self, tp: TopicPartition, position: int, end: int, confirmed: bool = True) -> None:
        """A log end seen while consuming at `position` (a smaller end after a reset keeps the old one); `confirmed`:
        no topic id to confirm it by (it counts at once), else it waits for `confirm`."""
        _, known = self.seen.get(tp, (position, end))
        known = max(known, position)  # read up to `position` (stored batches passed the id check): the log held that
        if confirmed:
            self.seen[tp] = (position, max(known, end, self.unconfirmed.pop(tp, end)))
        else:
            self.seen[tp] = (position, known)
            self.unconfirmed[tp] = max(end, self.unconfirmed.get(tp, end))

    def confirm(self, tps: Iterable[TopicPartition]) -> None:
        """A topic-id read showed these partitions' logs unchanged: the ends seen before it were theirs."""
        for tp in tps:
            end = self.unconfirmed.pop(tp, None)
            if end is not None and tp in self.seen:
                position, known = self.seen[tp]
                self.seen[tp] = (position, max(known, end))

    def old_end(self, tp: TopicPartition, stored: int) -> int | None:
        """The old log's end as last seen, when the stored position belongs to the log this process watched (its
        own last position ≤ stored ≤ that end; another member may have moved it through other resets since)."""
        if tp not in self.seen:
            return None
        position, end = self.seen[tp]
        return end if position <= stored <= end else None
