"""Calibration from fine score histograms: reliability tables and expected calibration error."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..grids import SCORE_EDGES
from ..stats import NEG, POS, BucketStats
from .rates import Rate, rate


@dataclass(frozen=True, slots=True)
class ReliabilityBin:
    """One calibration bin: mean predicted score vs observed positive share, with counts."""

    low: float
    high: float
    n: int
    mean_score: float | None
    observed: Rate

    def to_json(self) -> dict[str, object]:
        return {"low": self.low, "high": self.high, "n": self.n, "mean_score": self.mean_score,
                "observed": self.observed.to_json()}


@dataclass(frozen=True, slots=True)
class ReliabilityTable:
    """Reliability table of labelled predictions and the ECE it implies (None when no labels)."""

    strategy: str
    bins: tuple[ReliabilityBin, ...]
    ece: float | None
    n: int

    def to_json(self) -> dict[str, object]:
        return {"strategy": self.strategy, "ece": self.ece, "n": self.n,
                "bins": [b.to_json() for b in self.bins]}


def _equal_width_groups(n_bins: int) -> np.ndarray:
    """Fine-bin index boundaries for n equal-width bins (exact: the score grid holds the edges)."""
    cuts = [int(np.searchsorted(SCORE_EDGES, i / n_bins - 1e-12, side="left")) for i in range(n_bins + 1)]
    cuts[0], cuts[-1] = 0, len(SCORE_EDGES) - 1
    return np.asarray(cuts)


def reliability_table(stats: BucketStats, n_bins: int = 10) -> ReliabilityTable:
    """Equal-width reliability table over labelled predictions; ECE = Σ (n_b/N)|mean score − observed|.

    Bins are [lo, hi) as in scikit-learn's calibration_curve, the last one closed at 1.
    """
    counts = stats.hist[NEG] + stats.hist[POS]
    psums = stats.psum[NEG] + stats.psum[POS]
    pos = stats.hist[POS]
    cuts = _equal_width_groups(n_bins)
    total = int(counts.sum())
    bins: list[ReliabilityBin] = []
    ece = 0.0
    for i in range(n_bins):
        a, b = cuts[i], cuts[i + 1]
        n = int(counts[a:b].sum())
        k = int(pos[a:b].sum())
        mean = float(psums[a:b].sum() / n) if n else None
        bins.append(ReliabilityBin(i / n_bins, (i + 1) / n_bins, n, mean, rate(k, n)))
        if n:
            ece += (n / total) * abs(mean - k / n)  # type: ignore[operator]
    return ReliabilityTable("width", tuple(bins), ece if total else None, total)
