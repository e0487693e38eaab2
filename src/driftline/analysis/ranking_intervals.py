"""95 % intervals of the ranking metrics, each widened by the value's computation bound.

ROC AUC: DeLong's variance (DeLong, DeLong & Clarke-Pearson 1988, as pROC's `ci.auc`), from (score, label) pairs
or from histograms, on the logit scale. Average precision: the logit interval of Boyd, Eng & Page (2013), whose
only input is the number of positives.

Each positive's placement is the share of negatives scored below it (ties ½), each negative's the share of
positives scored above it; AUC is the mean of either, and its variance is var(positive placements)/m +
var(negative placements)/n (sample variances, m positives, n negatives). From histograms, scores sharing a bin
count as tied: the variance of the value `histogram_ranking` reports (the midpoint of its exact range).
"""

from __future__ import annotations

import math

import numpy as np

from .ranks import average_ranks
from .rates import Z95


def delong_variance(scores: np.ndarray, labels: np.ndarray) -> float | None:
    """DeLong's variance of the ROC AUC of (score, label) pairs; None with fewer than 2 of either class."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels) == 1
    m = int(y.sum())
    n = len(y) - m
    if m < 2 or n < 2:
        return None
    ranks = average_ranks(s)
    below = (ranks[y] - average_ranks(s[y])) / n  # negatives below each positive, ties ½, as a share
    above = 1.0 - (ranks[~y] - average_ranks(s[~y])) / m  # positives above each negative, ties ½, as a share
    return float(below.var(ddof=1) / m + above.var(ddof=1) / n)


def delong_variance_hist(pos_hist: np.ndarray, neg_hist: np.ndarray) -> float | None:
    """DeLong's variance from counts of positives and negatives per score bin (ascending); scores sharing a bin
    count as tied. None with fewer than 2 of either class."""
    pos, neg = np.asarray(pos_hist, dtype=np.float64), np.asarray(neg_hist, dtype=np.float64)
    m, n = pos.sum(), neg.sum()
    if m < 2 or n < 2:
        return None
    below = (np.cumsum(neg) - 0.5 * neg) / n  # the placement of a positive in each bin
    above = (m - np.cumsum(pos) + 0.5 * pos) / m  # the placement of a negative in each bin
    # multiply and sum, not np.dot: BLAS threads on the 41,776-bin ranking grid (see ranking.roc_auc_bounds)
    auc_p = float((pos * below).sum()) / m
    auc_n = float((neg * above).sum()) / n
    s10 = float((pos * (below - auc_p) ** 2).sum()) / (m - 1)
    s01 = float((neg * (above - auc_n) ** 2).sum()) / (n - 1)
    return s10 / m + s01 / n


def logit_interval(p: float, se: float, bound: float | None, z: float = Z95) -> tuple[float, float]:
    """logit(p) ± z·se / (p(1 − p)) mapped back (the delta method on the logit scale: inside (0, 1), and holding
    its level near 0 and 1), then widened by the computation bound and kept within [0, 1]; 0 < p < 1."""
    center, half = math.log(p / (1.0 - p)), z * se / (p * (1.0 - p))
    lo, hi = 1.0 / (1.0 + math.exp(half - center)), 1.0 / (1.0 + math.exp(-center - half))
    b = bound or 0.0
    return max(0.0, lo - b), min(1.0, hi + b)


def auc_interval(auc: float | None, variance: float | None, bound: float | None, z: float = Z95
                 ) -> tuple[float, float] | None:
    """The 95 % interval of an AUC with DeLong's variance, on the logit scale (logit_interval: the plain
    auc ± z·se covered 91 % of simulated windows at AUC 0.96, tests/test_ranking_intervals.py), widened by the
    computation bound. None when either is unknown, and when the placements do not vary (variance 0: classes that
    do not overlap, AUC 0 or 1, or every score equal): a zero-width interval would claim certainty that a few
    labels cannot give."""
    if auc is None or variance is None or not 0.0 < auc < 1.0 or variance <= 0.0:
        return None
    return logit_interval(auc, math.sqrt(variance), bound, z)


def ap_interval(ap: float | None, positives: int, bound: float | None, z: float = Z95) -> tuple[float, float] | None:
    """logit(ap) ± z / √(positives·ap·(1 − ap)), mapped back, widened by the computation bound (Boyd, Eng & Page
    2013, "Area under the precision-recall curve: point estimates and confidence intervals": logit_interval with
    the binomial standard error of ap over the positives); None without a value, with fewer than 2 positives, or
    at 0 or 1 (no negatives, or every positive on top: no width to estimate)."""
    if ap is None or positives < 2 or not 0.0 < ap < 1.0:
        return None
    return logit_interval(ap, math.sqrt(ap * (1.0 - ap) / positives), bound, z)
