"""Estimates beyond the labelled confusion matrix: the base-rate effect on precision, and label-free
early-warning metrics implied by the scores of predictions whose labels have not matured.

Label-free estimates assume the scores are calibrated (a prediction scored p is positive with
probability p). Their intervals cover only the randomness of the labels given calibrated scores, not
miscalibration: read them next to the labelled window's ECE and its noise floor (calibration.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..core.grids import SCORE_EDGES, score_edge_index
from ..core.stats import NEG, POS, SUM_P2, UNL, BucketStats
from .rates import Z95, Rate, rate

SCOPES = ("unlabelled", "all")
"""Which predictions an early-warning estimate covers: the UNL row only, or every prediction."""


# --- base-rate effect ---------------------------------------------------------------------------
def implied_precision(recall: float, fpr: float, prevalence: float) -> float | None:
    """Precision of a detector with this recall and FPR at a prevalence (Bayes): rπ / (rπ + f(1−π)).

    Recall and FPR carry over between populations; precision does not (seed 000: 0.571 → 0.197 at 2 %).
    None when nothing would be flagged.
    """
    for name, v in (("recall", recall), ("fpr", fpr), ("prevalence", prevalence)):
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], got {v}")
    flagged = recall * prevalence + fpr * (1.0 - prevalence)
    return recall * prevalence / flagged if flagged > 0 else None


@dataclass(frozen=True, slots=True)
class BaseRateEffect:
    """Current prevalence against a reference, and the precision recall and FPR imply at each prevalence.

    recall/fpr come from `source` ("reference" labelled predictions when given, else "current").
    implied_low/high is a conservative box interval: the formula at the ends of the three Wilson intervals
    (it increases with recall and prevalence and decreases with FPR).
    """

    prevalence: Rate
    reference_prevalence: float | None
    reference_prevalence_rate: Rate | None
    recall: Rate
    fpr: Rate
    source: str
    implied_precision: float | None
    implied_low: float | None
    implied_high: float | None
    implied_precision_at_reference: float | None
    observed_precision: Rate

    @property
    def prevalence_ratio(self) -> float | None:
        """Current over reference prevalence (None when either is unknown or the reference is 0)."""
        if self.prevalence.value is None or not self.reference_prevalence:
            return None
        return self.prevalence.value / self.reference_prevalence

    def to_json(self) -> dict[str, object]:
        return {
            "prevalence": {
                "current": self.prevalence.to_json(),
                "reference": self.reference_prevalence,
                "reference_rate": self.reference_prevalence_rate.to_json()
                if self.reference_prevalence_rate else None,
                "ratio": self.prevalence_ratio,
            },
            "recall": self.recall.to_json(), "fpr": self.fpr.to_json(), "source": self.source,
            "implied_precision": {"value": self.implied_precision, "low": self.implied_low,
                                  "high": self.implied_high, "method": "box over Wilson intervals"},
            "implied_precision_at_reference": self.implied_precision_at_reference,
            "observed_precision": self.observed_precision.to_json(),
        }


def _confusion_rates(stats: BucketStats) -> tuple[Rate, Rate, Rate, Rate]:
    """Prevalence, recall, FPR and precision of the labelled predictions."""
    tp, fn, fp, tn = stats.tp, stats.fn, stats.fp, stats.tn
    return rate(tp + fn, tp + fn + fp + tn), rate(tp, tp + fn), rate(fp, fp + tn), rate(tp, tp + fp)


def _implied_or_none(r: float | None, f: float | None, p: float | None) -> float | None:
    return None if r is None or f is None or p is None else implied_precision(r, f, p)


def base_rate_effect(current: BucketStats, reference: BucketStats | None = None,
                     reference_prevalence: float | None = None) -> BaseRateEffect:
    """Precision implied at the current prevalence by recall and FPR (reference's if given), vs reference.

    reference_prevalence, when given (e.g. from a reference profile), overrides the reference window's.
    Prevalence is over labelled predictions: with immature labels and explicit outcomes only it is biased
    (positives are often confirmed first), so use matured windows. With recall and FPR taken from the
    current window, the implied precision equals the observed one.
    """
    prev, cur_recall, cur_fpr, cur_precision = _confusion_rates(current)
    ref_rate: Rate | None = None
    recall, fpr, source = cur_recall, cur_fpr, "current"
    if reference is not None:
        ref_rate, ref_recall, ref_fpr, _ = _confusion_rates(reference)
        if ref_recall.n and ref_fpr.n:
            recall, fpr, source = ref_recall, ref_fpr, "reference"
    ref_value = reference_prevalence if reference_prevalence is not None else (ref_rate.value if ref_rate else None)
    return BaseRateEffect(
        prevalence=prev, reference_prevalence=ref_value, reference_prevalence_rate=ref_rate,
        recall=recall, fpr=fpr, source=source,
        implied_precision=_implied_or_none(recall.value, fpr.value, prev.value),
        implied_low=_implied_or_none(recall.low, fpr.high, prev.low),
        implied_high=_implied_or_none(recall.high, fpr.low, prev.high),
        implied_precision_at_reference=_implied_or_none(recall.value, fpr.value, ref_value),
        observed_precision=cur_precision,
    )


# --- label-free early warning ---------------------------------------------------------------------
def threshold_in_force(stats: BucketStats, configured: float) -> float:
    """The score cut that reproduces the window's observed flags, for estimates made from score histograms.

    Events may carry their own `threshold`; the confusion counts follow it, the fine score histograms do not
    know it. When the configured threshold does not split the histograms into the observed flagged and
    unflagged predictions but one fine-grid edge does (every event used one threshold), that edge is the cut
    in force (of several equivalent edges, the one with the fewest decimals: 0.7 rather than 0.69977). When
    none does (thresholds varied), the configured one is kept; varied thresholds whose flagged count one cut
    happens to reproduce are estimated at that cut. A window whose buckets recorded one threshold at ingest
    (core.flag_range) is estimated at that one, exactly."""
    rng = stats.flag_range
    if rng is not None and rng[2] and rng[0] == rng[1]:
        return rng[0]
    counts = stats.hist.sum(axis=0)
    flagged = int(stats.conf[:, 1].sum())
    tail = np.concatenate((np.cumsum(counts[::-1])[::-1], [0]))  # tail[i]: predictions in bins >= i
    if tail[score_edge_index(configured)] == flagged:
        return configured
    hits = np.flatnonzero(tail == flagged)
    if len(hits) == 0:
        return configured
    edges = [float(SCORE_EDGES[i]) for i in hits]
    return min(edges, key=lambda e: next((d for d in range(17) if round(e, d) == e), 17))



@dataclass(frozen=True, slots=True)
class Estimate:
    """A label-free estimate with an approximate 95 % interval (value ± 1.96 sd, clipped to its range)."""

    value: float | None
    low: float | None
    high: float | None
    sd: float | None
    method: str = "poisson-binomial delta"

    def to_json(self) -> dict[str, object]:
        return {"value": self.value, "low": self.low, "high": self.high, "sd": self.sd,
                "estimated": True, "method": self.method}


def _estimate(value: float | None, var: float, top: float = 1.0) -> Estimate:
    if value is None:
        return Estimate(None, None, None, None)
    sd = math.sqrt(max(var, 0.0))
    return Estimate(value, max(0.0, value - Z95 * sd), min(top, value + Z95 * sd), sd)


@dataclass(frozen=True, slots=True)
class EarlyWarning:
    """Recall, precision and prevalence the scores imply if calibrated; alert rate is observed.

    expected_positives = Σp, expected_tp = Σp over flagged (score ≥ threshold) predictions.
    """

    scope: str
    threshold: float
    n: int
    flagged: int
    expected_positives: Estimate
    expected_tp: Estimate
    recall: Estimate
    precision: Estimate
    prevalence: Estimate
    alert_rate: Rate

    def to_json(self) -> dict[str, object]:
        return {"estimated": True, "assumes": "calibrated scores", "scope": self.scope,
                "threshold": self.threshold, "n": self.n, "flagged": self.flagged,
                "expected_positives": self.expected_positives.to_json(),
                "expected_tp": self.expected_tp.to_json(), "recall": self.recall.to_json(),
                "precision": self.precision.to_json(), "prevalence": self.prevalence.to_json(),
                "alert_rate": {**self.alert_rate.to_json(), "estimated": False}}


def early_warning(stats: BucketStats, threshold: float = 0.5, scope: str = "unlabelled") -> EarlyWarning:
    """Label-free recall/precision/prevalence of predictions whose labels have not matured (UNL row).

    With Y_i ~ Bernoulli(p_i) independent: TP = Σ_flagged Y, FN = Σ_unflagged Y (Poisson-binomial, variance
    Σp(1−p)); recall = TP/(TP+FN), precision = TP/flagged, prevalence = (TP+FN)/n, with variances by the
    delta method. Σp² is exact for all predictions and per side of the threshold uses fine-bin means (a
    slight overestimate of the variance). Flagged bins are those at or above grids.score_edge_index(threshold).
    """
    if scope not in SCOPES:
        raise ValueError(f"unknown scope {scope!r}; expected one of {SCOPES}")
    rows = [UNL] if scope == "unlabelled" else [NEG, POS, UNL]
    counts = stats.hist[rows].sum(axis=0).astype(np.float64)
    # a bin with no prediction holds no score: labels move scores out of the unlabelled row by subtraction,
    # which leaves float residue (~1e-17) in its sums, and 0 predictions read as recall ~0.000 [0.000, 0.000]
    psums = np.where(counts > 0, stats.psum[rows].sum(axis=0), 0.0)
    sum_p2 = float(stats.sums[rows, SUM_P2].sum()) if counts.any() else 0.0
    t = score_edge_index(threshold)
    n, flagged = int(counts.sum()), int(counts[t:].sum())
    nz = counts > 0
    bin_var = np.zeros_like(psums)
    bin_var[nz] = psums[nz] - psums[nz] ** 2 / counts[nz]  # c·m(1−m) with m the fine-bin mean score
    s, tp = float(psums.sum()), float(psums[t:].sum())
    fn = s - tp
    v_s, v_tp, v_fn = s - sum_p2, float(bin_var[t:].sum()), float(bin_var[:t].sum())
    recall = _estimate(tp / s if s > 0 else None, (fn * fn * v_tp + tp * tp * v_fn) / s ** 4 if s > 0 else 0.0)
    precision = _estimate(tp / flagged if flagged else None, v_tp / flagged ** 2 if flagged else 0.0)
    prevalence = _estimate(s / n if n else None, v_s / n ** 2 if n else 0.0)
    return EarlyWarning(scope, threshold, n, flagged, _estimate(s, v_s, float(n)),
                        _estimate(tp, v_tp, float(flagged)), recall, precision, prevalence,
                        rate(int(stats.conf[rows, 1].sum()), n))  # observed: the events' own flags


@dataclass(frozen=True, slots=True)
class RealisedMetrics:
    """Labelled recall, precision and prevalence of a window, with its label coverage (labelled/all)."""

    recall: Rate
    precision: Rate
    prevalence: Rate
    alert_rate: Rate
    coverage: Rate

    def to_json(self) -> dict[str, object]:
        return {"estimated": False, "recall": self.recall.to_json(), "precision": self.precision.to_json(),
                "prevalence": self.prevalence.to_json(), "alert_rate": self.alert_rate.to_json(),
                "coverage": self.coverage.to_json()}


def realised_metrics(stats: BucketStats) -> RealisedMetrics:
    """Realised (labelled) metrics of a window once its labels matured, to set against an earlier estimate."""
    prev, recall, _, precision = _confusion_rates(stats)
    total = stats.predictions
    return RealisedMetrics(recall, precision, prev, rate(int(stats.conf[:, 1].sum()), total),
                           rate(prev.n, total))


@dataclass(frozen=True, slots=True)
class MetricComparison:
    """One metric's earlier label-free estimate next to its realised value."""

    metric: str
    estimated: Estimate
    realised: Rate

    @property
    def error(self) -> float | None:
        """Realised minus estimated (None when either is unknown)."""
        if self.estimated.value is None or self.realised.value is None:
            return None
        return self.realised.value - self.estimated.value

    @property
    def within_interval(self) -> bool | None:
        """Whether the realised value fell inside the estimate's interval."""
        e, r = self.estimated, self.realised.value
        if e.low is None or e.high is None or r is None:
            return None
        return bool(e.low <= r <= e.high)

    def to_json(self) -> dict[str, object]:
        return {"metric": self.metric, "estimated": self.estimated.to_json(),
                "realised": self.realised.to_json(), "error": self.error,
                "within_interval": self.within_interval}


@dataclass(frozen=True, slots=True)
class EstimateComparison:
    """An early-warning estimate paired with the realised values once labels matured."""

    scope: str
    threshold: float
    coverage: Rate
    metrics: tuple[MetricComparison, ...]

    def to_json(self) -> dict[str, object]:
        return {"scope": self.scope, "threshold": self.threshold, "coverage": self.coverage.to_json(),
                "metrics": [m.to_json() for m in self.metrics]}


def compare_estimate(estimate: EarlyWarning, realised: RealisedMetrics) -> EstimateComparison:
    """Pair an earlier label-free estimate with the realised metrics of the same predictions, per metric.

    The estimate should cover the predictions the realised values are measured on (scope "all" on the
    same window); an estimate over the then-unlabelled subset compares against a population that also
    holds the early-labelled predictions, which coverage makes visible.
    """
    pairs = (("recall", estimate.recall, realised.recall), ("precision", estimate.precision, realised.precision),
             ("prevalence", estimate.prevalence, realised.prevalence))
    return EstimateComparison(estimate.scope, estimate.threshold, realised.coverage,
                              tuple(MetricComparison(name, e, r) for name, e, r in pairs))
