"""Label-free estimates of a window from scores calibrated on the active reference's labels (issue 15.5), and
the check that matured labels do not contradict them: the `calibrated` block of `driftline calibration`, the
exporter's driftline_estimated_* series and the weekly report.
"""

from __future__ import annotations

from typing import Any

from ..analysis.calibrated import METRICS, CalibratedEstimate, CalibrationMap, estimate, fit_map
from ..analysis.estimates import MetricComparison
from ..analysis.profiles import Profile
from ..analysis.rates import INDICATIVE_BELOW_N as MIN_N, rate
from ..core.stats import NEG, POS, BucketStats

CONTRADICTED = "contradicted_by_matured_labels"
"""Trust reason: one maturity period earlier, matured labels contradicted the estimate (see `comparison`)."""
CONTRADICTED_NOW = "contradicted_by_window_labels"
"""Trust reason: the window's own labels contradict the estimate of the labelled predictions (see `own_labels`)."""
MIN_COVERAGE = 0.5
"""The window's own labels are checked once at least this share of its predictions is labelled: labels that
arrive faster for one class tilt a thinly labelled subset (user tryout: "recall ~0.741 trusted" printed next to
a measured 0.456 [0.415, 0.498] from 70 % of the week's labels)."""
Z_CONTRADICT = 3.0
"""A matured value this many of the estimate's sd (label noise + map error) away contradicts it: by chance
< 0.3 % per metric (normal approximation), ~1 % over the four, while the reference's score-label relation holds."""


def calibration_map(profile: Profile | None, variant: str | None = None) -> CalibrationMap | None:
    """The isotonic map of the reference's labelled score histograms: the variant's when kept (variants'
    score-label relations differ), else all variants' (None: no reference or no labels kept)."""
    if profile is None:
        return None
    h = profile.score_labels
    if variant is not None and profile.score_labels_by_variant and variant in profile.score_labels_by_variant:
        h = profile.score_labels_by_variant[variant]
    return None if h is None else fit_map(h[1], h[0])


def calibrated(stats: BucketStats, profile: Profile | None, threshold: float, variant: str | None = None,
               reasons: tuple[str, ...] = ()) -> CalibratedEstimate:
    """Estimated recall/precision/FPR/prevalence of all the window's predictions (label-free: it depends only
    on the scores, so it is also what was estimated before any label arrived)."""
    base = reasons if profile is not None else ("no_reference", *reasons)
    if profile is not None and profile.score_labels is None and not profile.score_labels_by_variant:
        base = ("reference_predates_labels", *reasons)  # stored by an older version: setting it again mends it
    return estimate(stats.hist.sum(axis=0), calibration_map(profile, variant), threshold, base)


def own_labels(stats: BucketStats, profile: Profile | None, threshold: float, variant: str | None = None
               ) -> tuple[list[MetricComparison], bool]:
    """The estimate of the window's labelled predictions (their scores only) next to their labels, and whether
    those contradict it (as in `comparison`); nothing is checked below MIN_COVERAGE."""
    labelled = stats.hist[[NEG, POS]].sum(axis=0)
    total = int(stats.hist.sum())
    if total == 0 or labelled.sum() < MIN_COVERAGE * total:
        return [], False
    return _rows(estimate(labelled, calibration_map(profile, variant), threshold), stats)


def comparison(old: BucketStats, profile: Profile | None, threshold: float, variant: str | None = None
               ) -> tuple[list[MetricComparison], bool]:
    """The earlier window's estimate next to its realised (labelled) values per metric, and whether matured
    labels contradict it: a realised value (at least MIN_N in its denominator) more than Z_CONTRADICT of the
    estimate's sd away. The estimate's sd already holds the realised value's label noise (it predicts the
    realised value), so this is not "outside the 95 % interval" (which misses ~5 % of the time per metric by
    chance): a no-drift week rarely raises it."""
    return _rows(calibrated(old, profile, threshold, variant), old)


def _rows(est: CalibratedEstimate, old: BucketStats) -> tuple[list[MetricComparison], bool]:
    """Estimated next to realised per metric, and whether a realised value (n ≥ MIN_N) contradicts it."""
    tp, fn, fp, tn = old.tp, old.fn, old.fp, old.tn
    realised = {"recall": rate(tp, tp + fn), "precision": rate(tp, tp + fp), "fpr": rate(fp, fp + tn),
                "prevalence": rate(tp + fn, int(old.conf[[NEG, POS]].sum()))}
    rows = [MetricComparison(k, est.metric(k), realised[k]) for k in METRICS]
    bad = any(_contradicts(r) and r.realised.n >= MIN_N for r in rows)
    return rows, bad


def _contradicts(r: MetricComparison) -> bool:
    e, q = r.estimated, r.realised
    if e.value is None or e.sd is None or q.value is None:
        return False
    return bool(abs(q.value - e.value) > Z_CONTRADICT * e.sd)


def _checkable(r: MetricComparison) -> bool:
    """Whether matured labels could contradict this row: an estimate with its sd, a realised value of n ≥ MIN_N."""
    e, q = r.estimated, r.realised
    return e.value is not None and e.sd is not None and q.value is not None and q.n >= MIN_N


def calibrated_block(stats: BucketStats, old: BucketStats | None, profile: Profile | None,
                     threshold: float, variant: str | None = None) -> dict[str, Any]:
    """The `calibrated` block: the window's estimate (untrusted when matured labels contradicted the earlier
    window's), and that earlier window's estimated-vs-realised rows (None without a maturity period)."""
    rows, bad = comparison(old, profile, threshold, variant) if old is not None else ([], False)
    now_rows, now_bad = own_labels(stats, profile, threshold, variant) if profile is not None else ([], False)
    reasons = ((CONTRADICTED,) if bad else ()) + ((CONTRADICTED_NOW,) if now_bad else ())
    est = calibrated(stats, profile, threshold, variant, reasons)
    return {**est.to_json(), "matured": None if old is None else {
        "contradicted": bad, "checked": any(_checkable(r) for r in rows), "metrics": [r.to_json() for r in rows]},
        "window_labels": {"checked": bool(now_rows), "contradicted": now_bad,
                          "metrics": [r.to_json() for r in now_rows]}}
