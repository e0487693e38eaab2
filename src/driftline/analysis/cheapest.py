"""The cheapest threshold on a week's labels: the monthly total cost (analysis.costs.business_kpis) at every
threshold where the labelled counts change, so the minimum found is the minimum over every threshold in [0, 1].

Exact over held (score, label) pairs: the counts change only at an observed score. From the fine score histograms
alone the counts are known only at the grid edges, so the search covers those and says how far apart they lie
(a finer threshold cannot be priced from the histogram).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.grids import SCORE_EDGES
from .costs import Costs


@dataclass(frozen=True, slots=True)
class Cheapest:
    """The threshold with the lowest monthly total (highest threshold among equal totals), its counts and how it
    was searched: `exact` over every held score, else over the score-grid edges `grid_step` apart around it."""

    threshold: float
    total: float
    counts: tuple[int, int, int, int]
    exact: bool
    grid_step: float | None
    candidates: int

    def to_json(self) -> dict[str, Any]:
        return {"threshold": self.threshold, "total": self.total, "exact": self.exact, "grid_step": self.grid_step,
                "searched": "every held score" if self.exact else "score-grid edges",
                "candidates": self.candidates, "in_sample": True}


def monthly_totals(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray, tn: np.ndarray, volume: float,
                   prevalence: float, costs: Costs) -> np.ndarray:
    """business_kpis(...).total for arrays of labelled counts (recall and FPR from them, at `prevalence`), as the
    trade-off table prices each row; vectorised so every threshold is priced at once."""
    pos = volume * prevalence
    neg = volume - pos
    recall = tp / np.maximum(tp + fn, 1)
    fpr = fp / np.maximum(fp + tn, 1)
    missed, fps = pos * (1.0 - recall), neg * fpr
    flagged = pos * recall + fps
    return (missed * costs.fn_cost + flagged * costs.review_cost + fps * costs.complaint_rate * costs.complaint_cost
            + volume * costs.model_cost_per_prediction)


def _pick(thresholds: np.ndarray, tp: np.ndarray, fp: np.ndarray, p: int, n: int, volume: float, prevalence: float,
          costs: Costs) -> tuple[int, np.ndarray]:
    totals = monthly_totals(tp, fp, p - tp, n - fp, volume, prevalence, costs)
    best = totals.min()
    return int(np.flatnonzero(totals == best).max()), totals  # ties: the highest threshold, as the table does


def cheapest_exact(scores: np.ndarray, labels: np.ndarray, volume: float, prevalence: float,
                   costs: Costs) -> Cheapest | None:
    """Over held pairs: candidates are every distinct score (flag score >= it) and 1.0 (flag none when no score
    is 1); None without labelled positives and negatives."""
    s, y = np.asarray(scores, dtype=np.float64), np.asarray(labels).astype(bool)
    p, n = int(y.sum()), int((~y).sum())
    if p == 0 or n == 0:
        return None
    cand = np.unique(np.concatenate((s, [1.0])))
    order = np.sort(s[y]), np.sort(s[~y])
    tp = p - np.searchsorted(order[0], cand, side="left")
    fp = n - np.searchsorted(order[1], cand, side="left")
    i, totals = _pick(cand, tp, fp, p, n, volume, prevalence, costs)
    return Cheapest(float(cand[i]), float(totals[i]), (int(tp[i]), int(fp[i]), p - int(tp[i]), n - int(fp[i])),
                    True, None, len(cand))


def cheapest_on_grid(neg_hist: np.ndarray, pos_hist: np.ndarray, volume: float, prevalence: float,
                     costs: Costs) -> Cheapest | None:
    """Over the fine score-grid edges (edge i flags bins >= i: the histogram's counts are exact there); the step
    is the larger gap to the neighbouring edges, the most a finer threshold could move. None as cheapest_exact."""
    pos, neg = np.asarray(pos_hist, dtype=np.int64), np.asarray(neg_hist, dtype=np.int64)
    p, n = int(pos.sum()), int(neg.sum())
    if p == 0 or n == 0:
        return None
    tp = np.concatenate((np.cumsum(pos[::-1])[::-1], [0]))
    fp = np.concatenate((np.cumsum(neg[::-1])[::-1], [0]))
    i, totals = _pick(SCORE_EDGES, tp, fp, p, n, volume, prevalence, costs)
    gaps = np.diff(SCORE_EDGES)
    step = max(gaps[i - 1] if i > 0 else 0.0, gaps[i] if i < len(gaps) else 0.0)
    return Cheapest(float(SCORE_EDGES[i]), float(totals[i]), (int(tp[i]), int(fp[i]), p - int(tp[i]),
                                                              n - int(fp[i])), False, float(step), len(SCORE_EDGES))
