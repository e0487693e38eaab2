"""What one ingestion batch did (`Pipeline.process_batch`), summed over a replay or a consumer's batches: counts for
progress displays, operational metrics and the replay's warnings. Re-exported by ingest.pipeline."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..core.events import DeadLetter


@dataclass(slots=True)
class BatchResult:
    """What one batch did, for progress displays and operational metrics."""

    records: int = 0
    accepted: int = 0
    dead: int = 0
    duplicates: int = 0
    folded: int = 0
    """Accepted predictions stored under OVERFLOW for a variant or version beyond `limits:` (each counted once)."""
    already_stored: int = 0
    """Lines of a file that another writer of the same path had stored already (skipped, see `_fence_files`)."""
    past_horizon: int = 0
    """Events dead-lettered past_horizon: older than the label horizon behind the stored watermark."""
    behind: int = 0
    """Accepted events more than the label horizon older than an event the same pipeline accepted before them
    (behind_count): a file out of time order; 0 for a time-sorted history, whose expiry is what a live run does."""
    counters: Counter[tuple[str, str]] = field(default_factory=Counter)
    key_problems: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(source, key_missing|key_mismatch) → records accepted with a wrong key (policy accept)."""
    max_ts: dict[str, float] = field(default_factory=dict)
    letters: list[DeadLetter] = field(default_factory=list)
    """The batch's dead letters (for the dead-letter topic); empty lists when summed over many batches."""
    conflict_example: str | None = None
    """The prediction_id of the first conflicting duplicate (engine.CONFLICTING), kept over many batches."""

    def add(self, other: BatchResult) -> None:
        self.records += other.records
        self.accepted += other.accepted
        self.dead += other.dead
        self.duplicates += other.duplicates
        self.folded += other.folded
        self.already_stored += other.already_stored
        self.past_horizon += other.past_horizon
        self.behind += other.behind
        self.counters.update(other.counters)
        self.key_problems.update(other.key_problems)
        for k, v in other.max_ts.items():
            self.max_ts[k] = max(v, self.max_ts.get(k, v))
        if self.conflict_example is None:
            self.conflict_example = other.conflict_example


def behind_count(ts: Sequence[float], newest: float | None, horizon_s: float) -> tuple[int, float | None]:
    """How many of `ts` (in arrival order) are more than `horizon_s` older than the newest time before them
    (`newest`: of the earlier batches; None: none), and the newest time after them."""
    if not ts:
        return 0, newest
    t = np.asarray(ts, dtype=np.float64)
    run = np.maximum.accumulate(np.concatenate(([-np.inf if newest is None else newest], t)))[:-1]
    return int(np.count_nonzero(t < run - horizon_s)), float(max(run[-1], t[-1]))
