"""ROC AUC and average precision: exact from (score, label) pairs, or bounded from histograms (the ranking
histograms, or the fine score histograms: ranking_hists).

Exact values follow scikit-learn (`roc_auc_score`: ties count ½; `average_precision_score`: one threshold per
distinct score, each positive credited with the precision at its score). From histograms only the order of
scores *within* a fine bin is unknown, which gives rigorous bounds: the exact value lies in [lo, hi] whatever
the scores inside each bin are (ties included). A histogram result reports the midpoint and the half-width as
its `bound`: |value − exact| ≤ bound. The bound is 0 when no bin holds both a positive and a negative (AUC)
or when every bin holding a positive holds nothing else (AP).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import digamma

from .ranking_intervals import ap_interval, auc_interval, delong_variance, delong_variance_hist
from .ranks import average_ranks
from ..core.grids import N_SCORE_BINS, RANK_SUB
from ..core.rank_hist import rank_rows
from ..core.stats import NEG, POS, BucketStats

EXACT, HISTOGRAM = "exact", "histogram"


@dataclass(frozen=True, slots=True)
class Ranking:
    """ROC AUC and average precision of a window with their error bounds and how they were computed."""

    roc_auc: float | None
    roc_auc_bound: float | None
    average_precision: float | None
    average_precision_bound: float | None
    method: str
    """"exact" (from the held (score, label) pairs: bound 0) or "histogram" (bounded, see the module doc)."""
    roc_auc_interval: tuple[float, float] | None = None
    """95 % interval of ROC AUC (auc_interval: DeLong's, widened by the bound); None with < 2 of either class."""
    average_precision_interval: tuple[float, float] | None = None
    """95 % interval of average precision (ap_interval: logit, widened by the bound); None with < 2 positives."""

    def auc_json(self) -> dict[str, Any]:
        ci = self.roc_auc_interval
        return {"value": self.roc_auc, "low": None if ci is None else ci[0], "high": None if ci is None else ci[1],
                "interval": "delong", "bound": self.roc_auc_bound, "method": self.method}

    def ap_json(self) -> dict[str, Any]:
        ci = self.average_precision_interval
        return {"value": self.average_precision, "low": None if ci is None else ci[0],
                "high": None if ci is None else ci[1], "interval": "logit", "bound": self.average_precision_bound,
                "method": self.method}

    @property
    def bound(self) -> float:
        """The larger of the two bounds (0 when neither metric is defined)."""
        return max(self.roc_auc_bound or 0.0, self.average_precision_bound or 0.0)


UNRANKED = Ranking(None, None, None, None, "not computed")
"""For a `classification` whose ranking metrics are not shown (metrics' per-variant briefs): skips their cost."""


# --- exact -------------------------------------------------------------------------------------------
def exact_roc_auc(scores: np.ndarray, labels: np.ndarray) -> float | None:
    """ROC AUC as `sklearn.metrics.roc_auc_score` (Mann–Whitney with ties ½); None without both classes."""
    y = np.asarray(labels) == 1
    n_pos = int(y.sum())
    n_neg = len(y) - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
    ranks = average_ranks(np.asarray(scores, dtype=np.float64))
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def exact_average_precision(scores: np.ndarray, labels: np.ndarray) -> float | None:
    """Average precision as `sklearn.metrics.average_precision_score`; None without positives."""
    y = (np.asarray(labels) == 1).astype(np.int64)
    n_pos = int(y.sum())
    if n_pos == 0:
        return None
    s = np.asarray(scores, dtype=np.float64)
    order = np.argsort(-s, kind="mergesort")
    s, y = s[order], y[order]
    last = np.r_[np.flatnonzero(np.diff(s) != 0), len(s) - 1]  # end of each group of equal scores
    tps = np.cumsum(y)[last]
    fps = (last + 1) - tps
    precision = tps / (tps + fps)
    d_recall = np.diff(np.r_[0, tps]) / n_pos
    return float(np.sum(d_recall * precision))


def exact_ranking(scores: np.ndarray, labels: np.ndarray) -> Ranking:
    """Both metrics from the window's labelled (score, label) pairs."""
    auc = exact_roc_auc(scores, labels)
    ap = exact_average_precision(scores, labels)
    positives = int((np.asarray(labels) == 1).sum())
    return Ranking(auc, None if auc is None else 0.0, ap, None if ap is None else 0.0, EXACT,
                   auc_interval(auc, delong_variance(scores, labels), 0.0), ap_interval(ap, positives, 0.0))


# --- bounded from histograms -------------------------------------------------------------------------
def roc_auc_bounds(pos_hist: np.ndarray, neg_hist: np.ndarray) -> tuple[float, float] | None:
    """[lo, hi] holding the exact ROC AUC: a positive and a negative sharing a bin may be in either order."""
    pos, neg = np.asarray(pos_hist, dtype=np.float64), np.asarray(neg_hist, dtype=np.float64)
    n_pos, n_neg = pos.sum(), neg.sum()
    if n_pos == 0 or n_neg == 0:
        return None
    neg_below = np.cumsum(neg) - neg
    # multiply and sum, not np.dot: on the 41,776-bin ranking grid BLAS would start its threads for each call
    # (twice the CPU for the same wall time; several times the wall time on a loaded machine)
    wins = float((pos * neg_below).sum())
    ties = float((pos * neg).sum())
    denom = float(n_pos * n_neg)
    return wins / denom, (wins + ties) / denom


def average_precision_bounds(pos_hist: np.ndarray, neg_hist: np.ndarray) -> tuple[float, float] | None:
    """[lo, hi] holding the exact average precision.

    Going down the bins from the top, a bins' p positives and n negatives follow a known tp `a` and fp `f`. The
    j-th positive of the bin is credited with the precision at the end of its group of equal scores, at least
    (a+j)/(a+f+n+j) (every negative of the bin before it) and at most (a+p)/(a+f+p) (all positives tied ahead of
    the negatives), since precision rises with each positive added while it is below 1.
    """
    pos = np.asarray(pos_hist, dtype=np.float64)[::-1]
    neg = np.asarray(neg_hist, dtype=np.float64)[::-1]
    n_pos = pos.sum()
    if n_pos == 0:
        return None
    a = np.cumsum(pos) - pos
    f = np.cumsum(neg) - neg
    has = pos > 0
    a, f, p, n = a[has], f[has], pos[has], neg[has]
    c = a + f + n
    lo = p - (f + n) * (digamma(c + p + 1.0) - digamma(c + 1.0))  # Σ_j (a+j)/(c+j) = p − (c−a)·(H(c+p) − H(c))
    hi = p * (a + p) / (a + f + p)
    return float(np.clip(lo.sum() / n_pos, 0.0, 1.0)), float(np.clip(hi.sum() / n_pos, 0.0, 1.0))


def ranking_hists(stats: BucketStats) -> tuple[np.ndarray, np.ndarray]:
    """(positive, negative) counts on the finest grid the window knows: its ranking histograms (grids.rank_bin)
    when every bucket has one and they sum, fine bin by fine bin, to the score histograms (a bucket last written
    by a version without them fails this); otherwise the score histograms themselves."""
    if stats.rank is not None:
        neg, pos = rank_rows(stats.rank)
        if (np.array_equal(pos.reshape(N_SCORE_BINS, RANK_SUB).sum(axis=1), stats.hist[POS])
                and np.array_equal(neg.reshape(N_SCORE_BINS, RANK_SUB).sum(axis=1), stats.hist[NEG])):
            return pos, neg
    return stats.hist[POS], stats.hist[NEG]


def histogram_ranking(pos_hist: np.ndarray, neg_hist: np.ndarray) -> Ranking:
    """Both metrics from the fine score histograms: the midpoint of each exact range, its half-width the bound."""
    auc = roc_auc_bounds(pos_hist, neg_hist)
    ap = average_precision_bounds(pos_hist, neg_hist)
    # a range of width 0 can come out a rounding error below it (−2.8e-16): a bound is never negative
    value = None if auc is None else float(auc[0] + auc[1]) / 2  # Python floats: numpy's leak into JSON and bools
    bound = None if auc is None else max(0.0, float(auc[1] - auc[0]) / 2)
    ap_value = None if ap is None else float(ap[0] + ap[1]) / 2
    ap_bound = None if ap is None else max(0.0, float(ap[1] - ap[0]) / 2)
    return Ranking(value, bound, ap_value, ap_bound, HISTOGRAM,
                   auc_interval(value, delong_variance_hist(pos_hist, neg_hist), bound),
                   ap_interval(ap_value, int(np.asarray(pos_hist).sum()), ap_bound))
