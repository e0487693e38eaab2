"""Two-proportion statistics for A/B readouts of independent arms (randomised split).

Per arm: recall, FPR, precision, alert rate and label coverage as Wilson `Rate`s. Between arms
(treatment − control): the Newcombe hybrid score interval for the difference (statsmodels
`confint_proportions_2indep(method="newcomb")`), a pooled score-test p-value, the relative lift with
the log-adjusted ratio interval (statsmodels' default for `compare="ratio"`), Holm correction across
the headline metrics, the sample-ratio-mismatch check and the label-balance check.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import chisquare, norm

from .. import numbers
from ..core.stats import NEG, POS, UNL
from .rates import Rate, rate, wilson_interval

HEADLINE_METRICS = ("recall", "fpr", "precision", "alert_rate")
"""Metrics compared between arms and corrected together with Holm."""


def z_for(alpha: float) -> float:
    """Two-sided normal critical value z_{1−α/2}."""
    return float(norm.ppf(1.0 - alpha / 2.0))


# --- per-arm counts and rates ---------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ArmCounts:
    """Decision counts of one arm in a window: labelled confusion cells plus unlabelled predictions."""

    tp: int
    fp: int
    fn: int
    tn: int
    unl_flagged: int = 0
    unl_unflagged: int = 0

    @classmethod
    def from_conf(cls, conf: np.ndarray) -> ArmCounts:
        """From a BucketStats-style conf[label_state, flagged] 3×2 count array."""
        c = np.asarray(conf, dtype=np.int64)
        return cls(int(c[POS, 1]), int(c[NEG, 1]), int(c[POS, 0]), int(c[NEG, 0]),
                   int(c[UNL, 1]), int(c[UNL, 0]))

    @property
    def predictions(self) -> int:
        return self.tp + self.fp + self.fn + self.tn + self.unl_flagged + self.unl_unflagged

    @property
    def flagged(self) -> int:
        return self.tp + self.fp + self.unl_flagged

    @property
    def labelled(self) -> int:
        return self.tp + self.fp + self.fn + self.tn

    @property
    def positives(self) -> int:
        return self.tp + self.fn

    @property
    def negatives(self) -> int:
        return self.fp + self.tn

    def metric_counts(self, metric: str) -> tuple[int, int]:
        """(k, n) behind a headline metric or label coverage."""
        table = {
            "recall": (self.tp, self.positives),
            "fpr": (self.fp, self.negatives),
            "precision": (self.tp, self.tp + self.fp),
            "alert_rate": (self.flagged, self.predictions),
            "label_coverage": (self.labelled, self.predictions),
        }
        return table[metric]

    def to_json(self) -> dict[str, int]:
        return {"tp": self.tp, "fp": self.fp, "fn": self.fn, "tn": self.tn,
                "unl_flagged": self.unl_flagged, "unl_unflagged": self.unl_unflagged}


@dataclass(frozen=True, slots=True)
class ArmMetrics:
    """Per-arm readout: counts and Wilson rates (recall, FPR, precision, alert rate, label coverage)."""

    predictions: int
    labelled: int
    positives: int
    recall: Rate
    fpr: Rate
    precision: Rate
    alert_rate: Rate
    label_coverage: Rate

    def to_json(self) -> dict[str, object]:
        return {"predictions": self.predictions, "labelled": self.labelled, "positives": self.positives,
                "recall": self.recall.to_json(), "fpr": self.fpr.to_json(),
                "precision": self.precision.to_json(), "alert_rate": self.alert_rate.to_json(),
                "label_coverage": self.label_coverage.to_json()}


def arm_metrics(c: ArmCounts, alpha: float = 0.05) -> ArmMetrics:
    """Wilson-interval rates of one arm; a rate with n = 0 is null, never 0."""
    z = z_for(alpha)
    r = {m: rate(*c.metric_counts(m), z=z) for m in (*HEADLINE_METRICS, "label_coverage")}
    return ArmMetrics(c.predictions, c.labelled, c.positives, r["recall"], r["fpr"], r["precision"],
                      r["alert_rate"], r["label_coverage"])


# --- two independent proportions --------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Lift:
    """Relative lift p_t/p_c − 1 with its interval; all None when undefined (p_c = 0 or n = 0)."""

    value: float | None
    low: float | None
    high: float | None

    def to_json(self) -> dict[str, float | None]:
        return {"value": self.value, "low": self.low, "high": self.high}


@dataclass(frozen=True, slots=True)
class ProportionComparison:
    """Treatment − control for one proportion, with the counts behind it (shown next to every p)."""

    metric: str
    k_t: int
    n_t: int
    k_c: int
    n_c: int
    diff: float | None
    low: float | None
    high: float | None
    p_value: float | None
    rel_lift: Lift
    p_holm: float | None = None

    @property
    def significant(self) -> bool:
        """True when the interval excludes 0."""
        return self.low is not None and self.high is not None and (self.low > 0 or self.high < 0)

    def to_json(self) -> dict[str, object]:
        return {"metric": self.metric, "diff": self.diff, "low": self.low, "high": self.high,
                "p_value": self.p_value, "p_holm": self.p_holm, "rel_lift": self.rel_lift.to_json(),
                "counts": {"treatment": {"k": self.k_t, "n": self.n_t},
                           "control": {"k": self.k_c, "n": self.n_c}}}


def newcombe_interval(k_t: int, n_t: int, k_c: int, n_c: int, alpha: float = 0.05) -> tuple[float, float]:
    """Newcombe hybrid score interval for p_t − p_c from the two Wilson intervals (needs n > 0)."""
    z = z_for(alpha)
    p1, p2 = k_t / n_t, k_c / n_c
    l1, u1 = wilson_interval(k_t, n_t, z)
    l2, u2 = wilson_interval(k_c, n_c, z)
    d = p1 - p2
    return d - math.hypot(p1 - l1, u2 - p2), d + math.hypot(u1 - p1, p2 - l2)


def two_proportion_p_value(k_t: int, n_t: int, k_c: int, n_c: int) -> float:
    """Two-sided pooled score (z) test of p_t = p_c, i.e. Pearson χ² without continuity correction."""
    pooled = (k_t + k_c) / (n_t + n_c)
    var = pooled * (1.0 - pooled) * (1.0 / n_t + 1.0 / n_c)
    if var <= 0.0:
        return 1.0  # both arms all-0 or all-1: observed difference is exactly 0
    zstat = (k_t / n_t - k_c / n_c) / math.sqrt(var)
    return float(2.0 * norm.sf(abs(zstat)))


def relative_lift(k_t: int, n_t: int, k_c: int, n_c: int, alpha: float = 0.05) -> Lift:
    """p_t/p_c − 1 with the log-adjusted (+0.5) risk-ratio interval minus 1; None if p_c = 0."""
    if n_t == 0 or n_c == 0 or k_c == 0:
        return Lift(None, None, None)
    a1, m1, a2, m2 = k_t + 0.5, n_t + 0.5, k_c + 0.5, n_c + 0.5
    log_ratio = math.log((a1 / m1) / (a2 / m2))
    half = z_for(alpha) * math.sqrt(1 / a1 - 1 / m1 + 1 / a2 - 1 / m2)
    return Lift((k_t / n_t) / (k_c / n_c) - 1.0, math.exp(log_ratio - half) - 1.0,
                math.exp(log_ratio + half) - 1.0)


def compare_proportions(k_t: int, n_t: int, k_c: int, n_c: int, metric: str = "",
                        alpha: float = 0.05) -> ProportionComparison:
    """Difference, Newcombe interval, score-test p-value and relative lift; nulls when an n is 0."""
    if n_t == 0 or n_c == 0:
        return ProportionComparison(metric, k_t, n_t, k_c, n_c, None, None, None, None, Lift(None, None, None))
    low, high = newcombe_interval(k_t, n_t, k_c, n_c, alpha)
    return ProportionComparison(metric, k_t, n_t, k_c, n_c, k_t / n_t - k_c / n_c, low, high,
                                two_proportion_p_value(k_t, n_t, k_c, n_c),
                                relative_lift(k_t, n_t, k_c, n_c, alpha))


def holm(p_values: Sequence[float | None]) -> tuple[float | None, ...]:
    """Holm step-down adjusted p-values (family = the non-null p-values); None stays None."""
    idx = [i for i, p in enumerate(p_values) if p is not None]
    m = len(idx)
    order = sorted(idx, key=lambda i: p_values[i])  # type: ignore[arg-type, return-value]
    out: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * float(p_values[i])))  # type: ignore[arg-type]
        out[i] = running
    return tuple(out)


@dataclass(frozen=True, slots=True)
class ArmComparison:
    """All headline-metric comparisons of one treatment against the control, Holm-corrected."""

    treatment: str
    control: str
    metrics: Mapping[str, ProportionComparison]

    def to_json(self) -> dict[str, object]:
        return {"treatment": self.treatment, "control": self.control,
                "metrics": {k: v.to_json() for k, v in self.metrics.items()}}


def compare_arms(treatment: ArmCounts, control: ArmCounts, alpha: float = 0.05,
                 names: tuple[str, str] = ("B", "A")) -> ArmComparison:
    """Recall, FPR, precision and alert rate of treatment − control, with Holm across the four."""
    raw = [compare_proportions(*treatment.metric_counts(m), *control.metric_counts(m), metric=m, alpha=alpha)
           for m in HEADLINE_METRICS]
    adjusted = holm([c.p_value for c in raw])
    fixed = {c.metric: _with_holm(c, p) for c, p in zip(raw, adjusted)}
    return ArmComparison(names[0], names[1], fixed)


def _with_holm(c: ProportionComparison, p_holm: float | None) -> ProportionComparison:
    return ProportionComparison(c.metric, c.k_t, c.n_t, c.k_c, c.n_c, c.diff, c.low, c.high, c.p_value,
                                c.rel_lift, p_holm)


# --- sample-ratio mismatch ------------------------------------------------------------------------
SRM_ALPHA = 0.001
SRM_MIN_RELATIVE_DEVIATION = 0.01
"""Materiality: some arm's observed share must be off its configured share by > 1 % of that share."""


@dataclass(frozen=True, slots=True)
class SRMResult:
    """χ² goodness of fit of arm sizes to the configured split, and whether it is a (material) mismatch."""

    chi2: float | None
    p_value: float | None
    mismatch: bool
    observed: Mapping[str, int]
    expected_share: Mapping[str, float]
    observed_share: Mapping[str, float | None]
    max_relative_deviation: float | None

    def to_json(self) -> dict[str, object]:
        return {"chi2": self.chi2, "p_value": self.p_value, "mismatch": self.mismatch,
                "observed": dict(self.observed), "expected_share": dict(self.expected_share),
                "observed_share": dict(self.observed_share),
                "max_relative_deviation": self.max_relative_deviation}


def srm_check(observed: Mapping[str, int], split: Mapping[str, float], alpha: float = SRM_ALPHA,
              min_relative_deviation: float = SRM_MIN_RELATIVE_DEVIATION) -> SRMResult:
    """Sample-ratio mismatch: flag only when p < alpha AND max |obs − exp|/exp share > the materiality.

    Large traffic makes tiny, harmless imbalances "significant"; small traffic makes large ones not,
    so both conditions are required. `split` weights are normalised to shares.
    """
    arms = list(split)
    total_w = float(sum(split[a] for a in arms))
    shares = {a: split[a] / total_w for a in arms}
    counts = {a: int(observed.get(a, 0)) for a in arms}
    n = sum(counts.values())
    if n == 0 or len(arms) < 2:
        return SRMResult(None, None, False, counts, shares, {a: None for a in arms}, None)
    obs = np.array([counts[a] for a in arms], dtype=np.float64)
    res = chisquare(obs, f_exp=np.array([shares[a] for a in arms]) * n)
    obs_share = {a: counts[a] / n for a in arms}
    dev = max(abs(obs_share[a] - shares[a]) / shares[a] for a in arms)
    p = float(res.pvalue)
    return SRMResult(float(res.statistic), p, bool(p < alpha and dev > min_relative_deviation),
                     counts, shares, obs_share, dev)


# --- label balance -----------------------------------------------------------------------------------
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
        med = {tn_: histogram_median(delay_t, delay_edges), cn_: histogram_median(delay_c, delay_edges)}
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
