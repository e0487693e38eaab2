"""Numeric distributions on driftline's fine grids (features: grids.feature_bin; scores: grids.SCORE_EDGES) as
sorted arrays, and the quantile cuts a reference profile freezes on them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.grids import SCORE_EDGES, feature_bin_lower, feature_bin_mid
from ..core.stats import FeatureHist

GRID_FEATURE, GRID_SCORE = "feature", "score"

_SCORE_MIDS = (SCORE_EDGES[:-1] + SCORE_EDGES[1:]) / 2.0


@dataclass(frozen=True, slots=True)
class FineSample:
    """A numeric distribution on a fine grid: sorted populated bin indices, their counts, other, missing."""

    idx: np.ndarray
    counts: np.ndarray
    other: int = 0
    missing: int = 0

    @property
    def n_numeric(self) -> int:
        return int(self.counts.sum())

    @property
    def total(self) -> int:
        return self.n_numeric + self.other + self.missing


def fine_sample(fh: FeatureHist | None) -> FineSample:
    """Numeric part of a FeatureHist as sorted arrays; categorical values count as `other`."""
    if fh is None:
        return FineSample(np.zeros(0, np.int64), np.zeros(0, np.int64))
    n = len(fh.num)
    idx = np.fromiter(fh.num.keys(), dtype=np.int64, count=n)
    cnt = np.fromiter(fh.num.values(), dtype=np.int64, count=n)
    order = np.argsort(idx, kind="stable")
    keep = cnt[order] > 0
    return FineSample(idx[order][keep], cnt[order][keep], int(sum(fh.cat.values())), int(fh.missing))


def score_sample(score_hist: np.ndarray | None) -> FineSample:
    """Score distribution from a fine score histogram (1-D, or per label state: summed over rows)."""
    if score_hist is None:
        return FineSample(np.zeros(0, np.int64), np.zeros(0, np.int64))
    h = np.asarray(score_hist, dtype=np.int64)
    if h.ndim == 2:
        h = h.sum(axis=0)
    idx = np.flatnonzero(h)
    return FineSample(idx.astype(np.int64), h[idx].astype(np.int64))


def grid_mids(grid: str, idx: np.ndarray) -> np.ndarray:
    """Representative value of fine bins: asinh-space midpoint (features) or arithmetic midpoint (score)."""
    return feature_bin_mid(idx) if grid == GRID_FEATURE else _SCORE_MIDS[idx]


def grid_edges(grid: str, cuts: np.ndarray) -> np.ndarray:
    """Value of fine-grid edges given by index (edge i = lower edge of fine bin i)."""
    if grid == GRID_FEATURE:
        return feature_bin_lower(cuts)
    return SCORE_EDGES[np.asarray(cuts, dtype=np.int64)]


def quantile_cuts(idx: np.ndarray, counts: np.ndarray, n_bins: int) -> np.ndarray:
    """Frozen edges (fine-edge indices) [lo, c_1 … c_{B−1}, hi] at the reference quantiles j/n_bins.

    Each inner cut sits in the gap after the populated fine bin whose cumulative mass is nearest the
    target quantile (mid-gap, so current values between two reference atoms split evenly); cuts that
    coincide (heavy atoms) merge, so B ≤ n_bins. lo/hi bound the reference range.
    """
    if len(idx) == 0:
        return np.zeros(0, dtype=np.int64)
    lo, hi = int(idx[0]), int(idx[-1]) + 1
    cum = np.cumsum(counts)
    if len(idx) == 1 or n_bins <= 1:
        return np.array([lo, hi], dtype=np.int64)
    targets = cum[-1] * np.arange(1, n_bins) / n_bins
    inner = cum[:-1]  # cutting after populated bin j (j < last) leaves cum[j] below the cut
    j = np.clip(np.searchsorted(inner, targets), 0, len(inner) - 1)
    jm = np.clip(j - 1, 0, len(inner) - 1)
    j = np.where(np.abs(inner[jm] - targets) <= np.abs(inner[j] - targets), jm, j)
    j = np.unique(j)
    cuts = idx[j] + 1 + (idx[j + 1] - idx[j] - 1) // 2
    return np.concatenate(([lo], cuts, [hi])).astype(np.int64)
