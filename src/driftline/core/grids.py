"""Fixed, fine bin grids shared by every bucket, so bucket histograms always merge by addition.

The score grid is logit-spaced (fine near 0 and 1, where fraud scores live) and contains the decile
edges 0.1 ... 0.9 exactly, so equal-width calibration bins and threshold tables are exact sums of
fine bins. The numeric feature grid is uniform in asinh(value), which covers negative, zero and
very large values with a roughly constant relative resolution; reference profiles pick their frozen
quantile edges among these fine edges, so re-binning a window onto a reference is exact.
"""

from __future__ import annotations

import numpy as np

# --- score grid -------------------------------------------------------------------------------
_LOGIT_STEP = 0.01
_LOGIT_MAX = 13.0
_logits = np.arange(-_LOGIT_MAX, _LOGIT_MAX + _LOGIT_STEP / 2, _LOGIT_STEP)
_inner = 1.0 / (1.0 + np.exp(-_logits))
_deciles = np.round(np.arange(1, 10) / 10.0, 10)
SCORE_EDGES: np.ndarray = np.unique(np.concatenate(([0.0], _inner, _deciles, [1.0])))
"""Edges of the fine score bins; bin i holds scores in [SCORE_EDGES[i], SCORE_EDGES[i+1]), last bin closed."""
N_SCORE_BINS: int = len(SCORE_EDGES) - 1


def score_bin(scores: np.ndarray) -> np.ndarray:
    """Index of the fine score bin of each score in [0, 1]."""
    idx = np.searchsorted(SCORE_EDGES, scores, side="right") - 1
    return np.clip(idx, 0, N_SCORE_BINS - 1)


def score_edge_index(threshold: float) -> int:
    """Index of the fine edge equal to (or just above) a threshold: bins >= it are flagged."""
    return int(np.searchsorted(SCORE_EDGES, threshold, side="left"))


RANK_SUB = 16
"""Equal-width sub-bins of each fine score bin in the ranking histograms (BucketStats.rank): 16 × finer order for
the ROC AUC / average precision bounds (their half-width shrinks about as 1/RANK_SUB), still a fixed grid."""
N_RANK_BINS: int = N_SCORE_BINS * RANK_SUB
_SCORE_WIDTHS = np.diff(SCORE_EDGES)


def rank_bin(scores: np.ndarray, fine: np.ndarray | None = None) -> np.ndarray:
    """Index of the ranking bin of each score in [0, 1]: fine bin i split into RANK_SUB equal widths, so bin
    i·RANK_SUB + j lies inside fine bin i (the two histograms check each other) and the index never decreases as
    the score grows (each step is a correctly rounded, hence monotone, float operation). `fine`: the scores'
    score_bin when the caller has it already (Moves.deltas bins every move's score for the score histograms)."""
    s = np.asarray(scores, dtype=np.float64)
    i = score_bin(s) if fine is None else fine
    j = np.floor((s - SCORE_EDGES[i]) / _SCORE_WIDTHS[i] * RANK_SUB)
    return i * RANK_SUB + np.clip(j, 0, RANK_SUB - 1).astype(np.int64)


# --- label delay grid (seconds) ------------------------------------------------------------------
DELAY_EDGES: np.ndarray = np.concatenate(([0.0], np.geomspace(60.0, 400 * 86400.0, 160)))
"""Label-delay bins: [0, 1 min) then log-spaced up to 400 days; the last bin is open-ended."""
N_DELAY_BINS: int = len(DELAY_EDGES)
DELAY_RATIO: float = float(DELAY_EDGES[2] / DELAY_EDGES[1])
"""Upper over lower edge of each log-spaced delay bin (≈ 1.087): a bin spans 8.7 % of its delays."""
DELAY_MIDS: np.ndarray = np.concatenate(([DELAY_EDGES[1] / 2], np.sqrt(DELAY_EDGES[1:-1] * DELAY_EDGES[2:]),
                                         [DELAY_EDGES[-1]]))
"""The delay each bin stands for: its geometric middle (within a factor √DELAY_RATIO, ±4.3 %, of every delay in
it), 30 s for the first bin [0, 1 min) and 400 d, the lower edge, for the open-ended last bin."""


def delay_bin(delays_s: np.ndarray) -> np.ndarray:
    """Index of the delay bin for delays in seconds (negative delays count as 0)."""
    idx = np.searchsorted(DELAY_EDGES, np.maximum(delays_s, 0.0), side="right") - 1
    return np.clip(idx, 0, N_DELAY_BINS - 1)


# --- numeric feature grid --------------------------------------------------------------------
FEATURE_STEP = 0.02
"""Width of a fine numeric feature bin in asinh(value) units (~2 % relative resolution)."""
FEATURE_U_MAX = 40.0
N_FEATURE_BINS: int = int(round(2 * FEATURE_U_MAX / FEATURE_STEP))


def feature_bin(values: np.ndarray) -> np.ndarray:
    """Index of the fine numeric feature bin of each finite value."""
    u = np.arcsinh(np.asarray(values, dtype=np.float64))
    idx = np.floor((u + FEATURE_U_MAX) / FEATURE_STEP).astype(np.int64)
    return np.clip(idx, 0, N_FEATURE_BINS - 1)


def feature_bin_lower(idx: np.ndarray | int) -> np.ndarray:
    """Lower value edge of fine numeric bin(s)."""
    return np.sinh(np.asarray(idx, dtype=np.float64) * FEATURE_STEP - FEATURE_U_MAX)


def feature_bin_mid(idx: np.ndarray | int) -> np.ndarray:
    """Representative value (midpoint in asinh space) of fine numeric bin(s)."""
    return np.sinh((np.asarray(idx, dtype=np.float64) + 0.5) * FEATURE_STEP - FEATURE_U_MAX)
