"""Label-free estimates from calibrated scores (as NannyML's CBPE): an isotonic map score → P(y=1) fitted on
the reference's labelled fine score histograms, applied to a window's score histogram.

Unlike estimates.early_warning (which trusts the raw scores as probabilities) this stays accurate when the
model is miscalibrated, as long as the reference's score–label relation still holds (no concept drift):
no label-free method can see concept drift, so `trust` says when the estimate cannot be used.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..core.grids import N_SCORE_BINS, score_edge_index
from .estimates import Estimate
from .rates import Z95

MIN_CLASS = 30
"""Fewest reference positives (and negatives) to fit a calibration map worth trusting."""
MAX_OUTSIDE = 0.05
"""Largest share of a window's predictions outside the reference's labelled score range still trusted."""
MIN_EFFECTIVE = 100
"""Fewest effective reference labels (see `effective_labels`) under each side of the threshold still trusted."""
METHOD = "isotonic map on reference labels; delta method, label sd + map sd"
METRICS = ("recall", "precision", "fpr", "prevalence")


def pav(pos: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pool-adjacent-violators on ordered cells (positives, totals; totals > 0): a non-decreasing fit.

    Returns (block start cell, block positives, block totals) of the pooled blocks.
    """
    starts: list[int] = []
    ks: list[float] = []
    ns: list[float] = []
    for i in range(len(n)):
        starts.append(i)
        ks.append(float(pos[i]))
        ns.append(float(n[i]))
        while len(ns) > 1 and ks[-2] / ns[-2] >= ks[-1] / ns[-1]:
            k, m = ks.pop(), ns.pop()
            starts.pop()
            ks[-1] += k
            ns[-1] += m
    return np.asarray(starts, np.int64), np.asarray(ks), np.asarray(ns)


REASON_TEXT = {
    "no_reference": "no reference set (`driftline reference set`)",
    "no_reference_labels": "the reference has no labelled scores of both classes to calibrate on",
    "reference_predates_labels": "the reference was set by a driftline that kept no labelled scores (before "
                                 "calibrated estimates): set it again (`driftline reference set`)",
    "few_reference_labels": "too few labelled positives or negatives in the reference",
    "outside_reference_support": "many scores lie outside the range the reference's labels cover",
    "sparse_reference_labels": "too few reference labels near this window's scores",
    "contradicted_by_matured_labels": "matured labels contradict it",
    "contradicted_by_window_labels": "this window's own labels contradict it (the score-label relation has "
                                     "shifted since the reference)",
}
"""Why a calibrated estimate is not trusted, in words for people (the JSON keeps the codes)."""


def reason_text(code: str) -> str:
    """The words for a not-trusted reason code (an unknown code passes through)."""
    return REASON_TEXT.get(code, code.replace("_", " "))


@dataclass(frozen=True, slots=True)
class CalibrationMap:
    """Isotonic P(y=1 | fine score bin) from reference labels: PAV blocks, interpolated linearly in the fine-bin
    index between the blocks' reference-weighted centres (constant beyond the first and last).

    Fine bin i takes (1 − frac[i])·p[left[i]] + frac[i]·p[left[i] + 1]; p and m are each block's positive rate
    and reference label count. lo_bin/hi_bin: the reference's labelled score range (populated fine bins).
    Interpolation keeps the map monotone and, unlike a step function, unbiased when a window's scores sit
    differently inside a wide block than the reference's did (covariate shift).
    """

    left: np.ndarray
    frac: np.ndarray
    p: np.ndarray
    m: np.ndarray
    positives: int
    negatives: int
    lo_bin: int
    hi_bin: int

    def bin_p(self) -> np.ndarray:
        """P(y=1) of every fine score bin."""
        right = np.minimum(self.left + 1, len(self.p) - 1)
        return (1.0 - self.frac) * self.p[self.left] + self.frac * self.p[right]

    def block_weights(self, counts: np.ndarray) -> np.ndarray:
        """Σ over fine bins of counts × each block's interpolation weight (per block)."""
        nb = len(self.p)
        right = np.minimum(self.left + 1, nb - 1)
        return (np.bincount(self.left, weights=counts * (1.0 - self.frac), minlength=nb)
                + np.bincount(right, weights=counts * self.frac, minlength=nb))

    def to_json(self) -> dict[str, object]:
        return {"blocks": len(self.p), "positives": self.positives, "negatives": self.negatives}


def fit_map(pos_hist: np.ndarray, neg_hist: np.ndarray) -> CalibrationMap | None:
    """The isotonic calibration map of labelled fine score histograms; None without both labels."""
    pos = np.asarray(pos_hist, np.float64)
    neg = np.asarray(neg_hist, np.float64)
    if pos.sum() == 0 or neg.sum() == 0:
        return None
    tot = pos + neg
    cells = np.flatnonzero(tot > 0)
    starts, ks, ns = pav(pos[cells], tot[cells])
    block_of_cell = np.zeros(len(cells), np.int64)
    block_of_cell[starts[1:]] = 1
    block_of_cell = np.cumsum(block_of_cell)
    centres = np.bincount(block_of_cell, weights=cells * tot[cells]) / ns
    i = np.arange(N_SCORE_BINS, dtype=np.float64)
    left = np.clip(np.searchsorted(centres, i, side="right") - 1, 0, len(ns) - 1)
    nxt = np.minimum(left + 1, len(ns) - 1)
    span = centres[nxt] - centres[left]
    frac = np.where(span > 0, np.clip((i - centres[left]) / np.where(span > 0, span, 1.0), 0.0, 1.0), 0.0)
    return CalibrationMap(left.astype(np.int64), frac, ks / ns, ns, int(pos.sum()), int(neg.sum()),
                          int(cells[0]), int(cells[-1]))


@dataclass(frozen=True, slots=True)
class CalibratedEstimate:
    """Recall, precision, FPR and prevalence of a window estimated from calibrated scores, and its trust.

    trusted is False with reasons when the estimate cannot be used (see `assess`).
    """

    threshold: float
    n: int
    flagged: int
    outside_support: float | None
    recall: Estimate
    precision: Estimate
    fpr: Estimate
    prevalence: Estimate
    reasons: tuple[str, ...]
    calibration: CalibrationMap | None
    spread: dict[str, tuple[float, float]]
    """Per metric: (sd from the window's label noise, sd from the map's error); the interval is
    value ± Z95·(sum of the two)."""

    @property
    def trusted(self) -> bool:
        return not self.reasons

    def metric(self, name: str) -> Estimate:
        return getattr(self, name)  # type: ignore[no-any-return]

    def to_json(self) -> dict[str, object]:
        return {"estimated": True, "method": METHOD, "assumes": "the reference's score-label relation holds",
                "threshold": self.threshold, "n": self.n, "flagged": self.flagged,
                "outside_support": self.outside_support, "trusted": self.trusted, "reasons": list(self.reasons),
                "calibration": None if self.calibration is None else self.calibration.to_json(),
                **{k: {**self.metric(k).to_json(), **self._spread_json(k)} for k in METRICS}}

    def _spread_json(self, name: str) -> dict[str, float | None]:
        sd = self.spread.get(name)
        return {"sd_labels": None if sd is None else sd[0], "sd_map": None if sd is None else sd[1]}


_NONE = Estimate(None, None, None, None, METHOD)


def _est(value: float, sd_labels: float, sd_map: float) -> Estimate:
    """value ± Z95·(sd_labels + sd_map): the map's error is one fixed offset shared by every window estimated
    against this reference (it does not average out over days), so its bound adds to the label noise's."""
    sd = sd_labels + sd_map
    return Estimate(value, max(0.0, value - Z95 * sd), min(1.0, value + Z95 * sd), sd, METHOD)


def effective_labels(cmap: CalibrationMap, counts: np.ndarray) -> float:
    """Reference labels the window's score distribution effectively rests on (Kish's n_eff of the reference
    reweighted to the window per map block: (Σ w)² / Σ w²/m); few where the window piles up on sparse blocks."""
    w = cmap.block_weights(np.asarray(counts, np.float64))
    den = float(np.sum(w * w / cmap.m))
    return float(w.sum()) ** 2 / den if den > 0 else 0.0


def estimate(counts: np.ndarray, cmap: CalibrationMap | None, threshold: float,
             base_reasons: tuple[str, ...] = ()) -> CalibratedEstimate:
    """Estimate a window's metrics from its fine score histogram `counts` (summed over the rows estimated).

    Expected TP = Σ_flagged n·p, FN = Σ_unflagged n·p (p from the map). Spread by the delta method over
    the label randomness (Poisson-binomial, Σ n·p(1−p) per side) and, separately, the map's error (each block's p
    with variance p̃(1−p̃)/m, p̃ = (k+½)/(m+1), shared by every window bin interpolated from the block); the
    interval adds the two (see `_est`).
    """
    c = np.asarray(counts, np.float64)
    t = score_edge_index(threshold)
    n, flagged = int(c.sum()), int(c[t:].sum())
    reasons = list(base_reasons)
    if cmap is None:
        return CalibratedEstimate(threshold, n, flagged, None, _NONE, _NONE, _NONE, _NONE,
                                  tuple(reasons or ["no_reference_labels"]), None, {})
    if min(cmap.positives, cmap.negatives) < MIN_CLASS:
        reasons.append("few_reference_labels")
    outside = None
    if n:
        outside = float((c[:cmap.lo_bin].sum() + c[cmap.hi_bin + 1:].sum()) / n)
        if outside > MAX_OUTSIDE:
            reasons.append("outside_reference_support")
    flag = np.zeros(N_SCORE_BINS)
    flag[t:] = 1.0
    a, u = cmap.block_weights(c * flag), cmap.block_weights(c * (1.0 - flag))  # flagged/unflagged per block
    q = cmap.bin_p()
    tp, fn = float(c[t:] @ q[t:]), float(c[:t] @ q[:t])
    fp, tn = flagged - tp, (n - flagged) - fn
    if min(effective_labels(cmap, c * flag) if flagged else math.inf,
           effective_labels(cmap, c * (1.0 - flag)) if n > flagged else math.inf) < MIN_EFFECTIVE:
        reasons.append("sparse_reference_labels")
    var_tp, var_fn = float(c[t:] @ (q[t:] * (1 - q[t:]))), float(c[:t] @ (q[:t] * (1 - q[:t])))
    pt = (cmap.p * cmap.m + 0.5) / (cmap.m + 1.0)
    v_map = pt * (1 - pt) / cmap.m

    def spread(g_tp: float, g_fn: float) -> tuple[float, float]:
        """(sd from label noise, sd from the map's error) of a metric with gradient (g_tp, g_fn)."""
        return (math.sqrt(g_tp ** 2 * var_tp + g_fn ** 2 * var_fn),
                math.sqrt(float(((g_tp * a + g_fn * u) ** 2) @ v_map)))

    s, neg = tp + fn, fp + tn
    d_s, d_f, d_neg, d_n = s or 1.0, flagged or 1, neg or 1.0, n or 1  # safe denominators, masked by `ok`
    forms = {"recall": (s > 0, tp / d_s, fn / d_s ** 2, -tp / d_s ** 2),  # (ok, value, ∂/∂TP, ∂/∂FN)
             "precision": (flagged > 0, tp / d_f, 1 / d_f, 0.0),
             "fpr": (neg > 0, fp / d_neg, -tn / d_neg ** 2, fp / d_neg ** 2),
             "prevalence": (n > 0, s / d_n, 1 / d_n, 1 / d_n)}
    spreads = {k: spread(g_tp, g_fn) for k, (ok, _, g_tp, g_fn) in forms.items() if ok}
    est = {k: _est(forms[k][1], *spreads[k]) if k in spreads else _NONE for k in METRICS}
    return CalibratedEstimate(threshold, n, flagged, outside, est["recall"], est["precision"], est["fpr"],
                              est["prevalence"], tuple(reasons), cmap, spreads)
