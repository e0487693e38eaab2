"""Label balance between A/B arms: label coverage (overall, among flagged, among unflagged) and label delay per
arm, with warnings when labels follow flags and one arm flags more (its recall would be overstated differently).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from .. import numbers
from .abstats import ArmCounts, ProportionComparison, compare_proportions
from .rates import Rate, rate

LABEL_ALPHA = 0.01
LABEL_MIN_RELATIVE_GAP = 0.10
"""A label-balance warning needs p < 0.01 and a relative gap above 10 % (delays: medians off by > 20 %)."""
DELAY_MIN_RELATIVE_GAP = 0.20
LABEL_MIN_JUDGE = 30
"""Labelled predictions each arm needs before label balance is judged: with fewer (0 % coverage while labels
are still arriving, say) no difference could be seen, so "ok" would claim what was never checked."""


@dataclass(frozen=True, slots=True)
class LabelBalance:
    """Label coverage (overall, among flagged, among unflagged) and label delay per arm, with warnings."""

    coverage: Mapping[str, Rate]
    coverage_flagged: Mapping[str, Rate]
    coverage_unflagged: Mapping[str, Rate]
    coverage_diff: ProportionComparison
    median_delay_s: Mapping[str, float | None]
    delay_p_value: float | None
    warnings: tuple[str, ...]
    cannot_judge: str | None = None
    """Why balance cannot be judged (too few labels in an arm), or None when it was judged."""

    @property
    def status(self) -> str:
        """'cannot_judge', 'warning' or 'ok'."""
        return "cannot_judge" if self.cannot_judge else ("warning" if self.warnings else "ok")

    def to_json(self) -> dict[str, object]:
        return {"status": self.status, "cannot_judge": self.cannot_judge,
                "min_labelled_per_arm": LABEL_MIN_JUDGE,
                "coverage": {a: r.to_json() for a, r in self.coverage.items()},
                "coverage_flagged": {a: r.to_json() for a, r in self.coverage_flagged.items()},
                "coverage_unflagged": {a: r.to_json() for a, r in self.coverage_unflagged.items()},
                "coverage_diff": self.coverage_diff.to_json(), "median_delay_s": dict(self.median_delay_s),
                "delay_p_value": self.delay_p_value, "warnings": list(self.warnings)}


def histogram_median(counts: np.ndarray, edges: np.ndarray) -> float | None:
    """Median of a histogram (bin i = [edges[i], edges[i+1]), last bin open: its lower edge); None if empty."""
    c = np.asarray(counts, dtype=np.float64)
    n = c.sum()
    if n <= 0:
        return None
    cum = np.cumsum(c)
    i = int(np.searchsorted(cum, n / 2.0, side="left"))
    if i + 1 >= len(edges):
        return float(edges[i])
    before = cum[i] - c[i]
    frac = (n / 2.0 - before) / c[i] if c[i] > 0 else 0.0
    return float(edges[i] + frac * (edges[i + 1] - edges[i]))


def shown_median(counts: np.ndarray, edges: np.ndarray) -> float | None:
    """The median as every label-delay readout shows it: on the label-delay grid, the geometric middle of the bin
    holding it (classification.delay_quantiles), so the health check's median equals the arm table's p50 (churn
    tryout: one `ab` screen read 'label delay p50 43.9 d' for an arm and 'median delay 45.3 d' for the same arm
    under health checks); on another grid, histogram_median."""
    from ..core.grids import DELAY_EDGES
    from .classification import delay_quantiles
    if len(edges) == len(DELAY_EDGES) and np.array_equal(edges, DELAY_EDGES) and len(counts) == len(DELAY_EDGES):
        return delay_quantiles(np.asarray(counts))["p50"]
    return histogram_median(counts, edges)


def binned_mannwhitney_p(h1: np.ndarray, h2: np.ndarray) -> float | None:
    """Two-sided Mann–Whitney U p-value from two histograms on the same bins (ties = shared bins).

    Same as scipy.stats.mannwhitneyu(method="asymptotic", use_continuity=True) on the expanded samples.
    """
    a, b = np.asarray(h1, dtype=np.float64), np.asarray(h2, dtype=np.float64)
    n1, n2 = a.sum(), b.sum()
    if n1 == 0 or n2 == 0:
        return None
    tot = a + b
    nn = n1 + n2
    midrank = np.cumsum(tot) - tot + (tot + 1.0) / 2.0
    u1 = float((a * midrank).sum() - n1 * (n1 + 1.0) / 2.0)
    tie = float((tot ** 3 - tot).sum())
    var = n1 * n2 / 12.0 * ((nn + 1.0) - tie / (nn * (nn - 1.0)))
    if var <= 0:
        return 1.0
    zstat = (abs(u1 - n1 * n2 / 2.0) - 0.5) / math.sqrt(var)
    return float(min(1.0, 2.0 * norm.sf(zstat)))


def _pct(r: Rate) -> str:
    return "n/a" if r.value is None else numbers.percent(r.value)


def label_balance(treatment: ArmCounts, control: ArmCounts, names: tuple[str, str] = ("B", "A"),
                  delay_t: np.ndarray | None = None, delay_c: np.ndarray | None = None,
                  delay_edges: np.ndarray | None = None, alpha: float = LABEL_ALPHA) -> LabelBalance:
    """Compare label coverage and delay across arms; warn when labels follow flags and one arm flags more.

    When flagged predictions get labelled r times as often as unflagged ones, observed recall is
    R·r/(R·r + 1 − R) for true recall R: overstated in both arms by amounts that depend on R, so the
    recall difference is biased. Delay histograms (grids.DELAY_EDGES bins) are optional.
    """
    tn_, cn_ = names
    arms = {tn_: treatment, cn_: control}
    cov = {a: rate(c.labelled, c.predictions) for a, c in arms.items()}
    cov_f = {a: rate(c.tp + c.fp, c.flagged) for a, c in arms.items()}
    cov_u = {a: rate(c.fn + c.tn, c.predictions - c.flagged) for a, c in arms.items()}
    diff = compare_proportions(treatment.labelled, treatment.predictions, control.labelled,
                               control.predictions, metric="label_coverage")
    warnings: list[str] = []
    if _material(diff, alpha, cov[tn_].value, cov[cn_].value, LABEL_MIN_RELATIVE_GAP):
        warnings.append(f"label coverage differs between arms ({tn_} {_pct(cov[tn_])} vs {cn_} "
                        f"{_pct(cov[cn_])}, p = {numbers.pvalue(diff.p_value)}): labelled metrics compare different "
                        f"subsets of traffic.")
    alert = compare_proportions(*treatment.metric_counts("alert_rate"), *control.metric_counts("alert_rate"))
    lab_f = treatment.tp + treatment.fp + control.tp + control.fp
    n_f = treatment.flagged + control.flagged
    lab_u = treatment.labelled + control.labelled - lab_f
    n_u = treatment.predictions + control.predictions - n_f
    follows = compare_proportions(lab_f, n_f, lab_u, n_u)
    cf = lab_f / n_f if n_f else None
    cu = lab_u / n_u if n_u else None
    follows_flags = (_material(follows, alpha, cf, cu, LABEL_MIN_RELATIVE_GAP) and cf is not None
                     and cu is not None and cf > cu and alert.p_value is not None and alert.p_value < alpha)
    more, less = (tn_, cn_) if (alert.diff or 0.0) > 0 else (cn_, tn_)
    ar = {tn_: rate(*treatment.metric_counts("alert_rate")), cn_: rate(*control.metric_counts("alert_rate"))}
    if follows_flags and (cov[more].value or 0.0) > (cov[less].value or 0.0):
        warnings.append(
            f"{more} flags more than {less} (alert rate {_pct(ar[more])} vs {_pct(ar[less])}) and flagged "
            f"predictions are labelled more often than unflagged ones ({numbers.percent(cf)} vs "
            f"{numbers.percent(cu)}): "
            f"{more} gets more labels, labelled positives over-represent caught cases, and recall is "
            f"overstated by a different amount in each arm, so the recall comparison is biased; confirm it "
            f"on matured labels (after the label horizon).")
    med: dict[str, float | None] = {tn_: None, cn_: None}
    delay_p = None
    if delay_t is not None and delay_c is not None and delay_edges is not None:
        med = {tn_: shown_median(delay_t, delay_edges), cn_: shown_median(delay_c, delay_edges)}
        delay_p = binned_mannwhitney_p(delay_t, delay_c)
        mt, mc = med[tn_], med[cn_]
        if (delay_p is not None and delay_p < alpha and mt and mc
                and max(mt, mc) / min(mt, mc) - 1.0 > DELAY_MIN_RELATIVE_GAP):
            slow = tn_ if mt > mc else cn_
            warnings.append(f"labels arrive later for {slow} (median delay {numbers.duration(mt)} for {tn_} vs "
                            f"{numbers.duration(mc)} for {cn_}, p = {numbers.pvalue(delay_p)}): the recent part "
                            f"of the window is less mature for {slow}.")
    few = any(c.labelled < LABEL_MIN_JUDGE for c in arms.values())
    why = None if not few else (f"too few labels: {LABEL_MIN_JUDGE} labelled predictions needed in each arm, "
                                f"{tn_} has {treatment.labelled:,} and {cn_} {control.labelled:,}")
    return LabelBalance(cov, cov_f, cov_u, diff, med, delay_p, tuple(warnings), why)


def _material(c: ProportionComparison, alpha: float, v1: float | None, v2: float | None, gap: float) -> bool:
    """Significant at alpha and relatively different by more than `gap` of the smaller value."""
    if c.p_value is None or c.p_value >= alpha or v1 is None or v2 is None:
        return False
    lo, hi = min(v1, v2), max(v1, v2)
    return hi > 0 and (lo == 0 or hi / lo - 1.0 > gap)
