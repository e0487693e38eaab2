"""The matured part of a window under the implicit-negative policy: its buckets whose every prediction is at least
`labels.implicit_negative_after` old at the newest stored event (so has an outcome or its implicit negative label),
read for the numbers that need labelled negatives (analysis.matured says why) by window_metrics (metrics, triggers,
exporter, report), calibration, slices and ab (its arms' FPR, precision, costs and always-valid plans, and shadow
mode's paired FPR test and precision and cost intervals)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..config import Config
from ..core.events import iso
from ..core.stats import UNL
from ..numbers import duration
from ..storage.bucket_row import BucketRow
from ..storage.compaction import COMPACTED_SHARD, DAY_S
from ..storage.store import Store
from .windows import merged


@dataclass(frozen=True, slots=True)
class Maturing:
    """Predictions before `before` (a bucket boundary) have their implicit label; buckets are `bucket_s` wide."""

    before: float
    bucket_s: int
    implicit_after_s: float

    def rows(self, rows: Sequence[BucketRow]) -> list[BucketRow]:
        """The rows whose bucket ends at or before `before` (a compacted day row: its day)."""
        return [r for r in rows
                if r.bucket_start + (DAY_S if r.shard == COMPACTED_SHARD else self.bucket_s) <= self.before]


def maturing(store: Store, config: Config) -> Maturing | None:
    """The maturity boundary of the model's windows: the newest stored event less `implicit_negative_after`,
    aligned down to a bucket (the rule of `--matured` and of the maintenance pass that writes implicit negatives);
    None under the explicit policy or with nothing stored."""
    after = config.labels.implicit_after_s
    if after is None:
        return None
    newest = store.newest_event()
    if newest is None:
        return None
    b = config.bucket_s
    return Maturing(float(math.floor((newest - after) / b) * b), b, after)


def matured_split(rows: Sequence[BucketRow], mat: Maturing | None, what: str
                  ) -> tuple[list[BucketRow] | None, str | None]:
    """For a readout that reads `what` over the matured part of its window: the matured rows and the note saying
    so (how many predictions that leaves out, how many of them still await their implicit label); (None, None)
    under the explicit policy or for a window wholly matured (read `what` over every row)."""
    if mat is None or not rows:
        return None, None
    old = mat.rows(rows)
    if len(old) == len(rows):
        return None, None
    ids = {id(r) for r in old}
    young = merged([r for r in rows if id(r) not in ids])
    n_old = int(merged(old).conf.sum()) if old else 0
    n_young = int(young.conf.sum())
    return old, (f"only part of this window has matured labels: {what} are read over its {n_old:,} predictions "
                 f"before {iso(mat.before)} (of {n_old + n_young:,}), the ones at least "
                 f"labels.implicit_negative_after ({duration(mat.implicit_after_s)}) old; the {n_young:,} younger "
                 f"ones ({int(young.conf[UNL].sum()):,} still awaiting their implicit label) are left out of them, as "
                 f"their early outcomes come without their negatives")
