"""Average ranks of a sample (ties share their mean rank): the ranking metrics and their intervals rank scores."""

from __future__ import annotations

import numpy as np


def average_ranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks with ties given their average rank: scipy.stats.rankdata(x) (its algorithm, same floats),
    here because importing scipy.stats would cost `driftline metrics` most of a second (issue 17)."""
    order = np.argsort(x, kind="mergesort")
    inverse = np.empty(len(x), dtype=np.intp)
    inverse[order] = np.arange(len(x), dtype=np.intp)
    xs = x[order]
    starts = np.r_[True, xs[1:] != xs[:-1]]
    dense = starts.cumsum()[inverse]
    count = np.r_[np.nonzero(starts)[0], len(starts)]
    return 0.5 * (count[dense] + count[dense - 1] + 1)
