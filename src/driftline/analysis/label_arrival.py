"""When a window's labels arrived, from the per-bucket label-delay histograms: how many came at or after a time.

Buckets keep confusion counts with the labels known now, not when each label came, so a backtest (`--at T` on a
replayed history) judges labels a live evaluation at T had not seen. The delay histogram of each bucket bounds how
many: a label of delay bin [lo, hi) on a prediction of bucket [b, b + w) arrived in [b + lo, b + w + hi), so it
surely came at or after T when b + lo ≥ T, and possibly when b + w + hi > T (churn tryout: a recall trigger
backtested at 2026-06-15 fired on 1,460 labels that all arrived 30–60 days later; live it held none).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ..core.grids import DELAY_EDGES


@dataclass(frozen=True, slots=True)
class LateLabels:
    """Labels (with a recorded delay) of a window that arrived at or after a time: surely and at most."""

    labels: int
    surely_after: int
    maybe_after: int

    def to_json(self) -> dict[str, int]:
        return {"labels": self.labels, "surely_after": self.surely_after, "maybe_after": self.maybe_after}


_LOWER = DELAY_EDGES
_UPPER = np.concatenate((DELAY_EDGES[1:], [np.inf]))


def late_labels(buckets: Iterable[tuple[float, float, np.ndarray]], at: float) -> LateLabels:
    """Of the labels in `buckets` (bucket start, width in seconds, label-delay histogram on DELAY_EDGES), how many
    surely and how many possibly arrived at or after `at`. Outcomes stamped before their prediction have no delay
    recorded and are not counted (their arrival time is unknown)."""
    total = surely = maybe = 0
    for start, width, hist in buckets:
        h = np.asarray(hist, dtype=np.int64)
        total += int(h.sum())
        surely += int(h[start + _LOWER >= at].sum())
        maybe += int(h[start + width + _UPPER > at].sum())
    return LateLabels(total, surely, maybe)


def labels_later_than(delay_hist: np.ndarray, after_s: float) -> tuple[int, int]:
    """(labels whose delay was surely at least `after_s`: their delay bin starts there or later, labels with a
    recorded delay) of a label-delay histogram on DELAY_EDGES. Under the implicit-negative policy such labels came
    after their prediction had been counted as a negative."""
    h = np.asarray(delay_hist, dtype=np.int64)
    return int(h[_LOWER >= after_s].sum()), int(h.sum())
