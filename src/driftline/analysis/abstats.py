"""Two-proportion statistics for A/B readouts of independent arms (randomised split).

Per arm: recall, FPR, precision, alert rate and label coverage as Wilson `Rate`s. Between arms
(treatment − control): the Newcombe hybrid score interval for the difference (statsmodels
`confint_proportions_2indep(method="newcomb")`), a pooled score-test p-value, the relative lift with
the MOVER-R ratio interval from the same Wilson intervals (`relative_lift`), Holm correction across
the headline metrics and the sample-ratio-mismatch check (label balance: label_balance.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import chisquare, norm

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
    matured: ArmCounts | None = None
    """Under the implicit-negative policy, over a window reaching into the maturity period: the counts of its matured
    part, which FPR and precision (and costs, plans) read (analysis.matured says why); None: these counts."""

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

    @property
    def negative_reading(self) -> ArmCounts:
        """The counts the numbers that read labelled negatives come from: the matured part's when set."""
        return self if self.matured is None else self.matured

    @property
    def for_costs(self) -> ArmCounts:
        """The counts of the stratified cost estimate (analysis.costs): with a matured part, its labelled cells
        (miss share, precision) and the rest of the window's predictions as unlabelled (the alert rate stays the
        whole window's, as in `metrics`); else these."""
        m = self.matured
        if m is None:
            return self
        return ArmCounts(m.tp, m.fp, m.fn, m.tn, self.flagged - m.tp - m.fp,
                         self.predictions - self.flagged - m.fn - m.tn)

    def metric_counts(self, metric: str) -> tuple[int, int]:
        """(k, n) behind a headline metric or label coverage (FPR and precision: of `negative_reading`)."""
        m = self.negative_reading
        table = {
            "recall": (self.tp, self.positives),
            "fpr": (m.fp, m.negatives),
            "precision": (m.tp, m.tp + m.fp),
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
    """p_t/p_c − 1 with the MOVER-R interval (Donner & Zou 2012) of the ratio from the two Wilson intervals, minus 1;
    None if p_c = 0. Built from the same Wilson intervals as the Newcombe difference, so the two agree at the edges:
    the log-adjusted risk ratio gave 1 of 1 against 100 of 200 +100 % [+73.8 %, +129.0 %] (its variance term of an
    arm with k = n is 0) beside a difference interval holding 0. With k_t = 0 the lower end is −100 %, the estimate.

    Each limit is the ratio R at which MOVER's interval of p_t − R·p_c has that end at 0: a quadratic whose root is
    taken in the rationalised form c / (b + √(b² − a·c)), stable also where its leading coefficient a is ≤ 0 (a control
    arm whose Wilson upper end exceeds twice its rate)."""
    if n_t == 0 or n_c == 0 or k_c == 0:
        return Lift(None, None, None)
    z = z_for(alpha)
    p1, p2 = k_t / n_t, k_c / n_c
    l1, u1 = wilson_interval(k_t, n_t, z)
    l2, u2 = wilson_interval(k_c, n_c, z)
    b = p1 * p2
    c_low = l1 * (2 * p1 - l1)
    low = 0.0 if k_t == 0 else c_low / (b + math.sqrt(max(b * b - u2 * (2 * p2 - u2) * c_low, 0.0)))
    a_up = l2 * (2 * p2 - l2)
    high = (b + math.sqrt(max(b * b - a_up * u1 * (2 * p1 - u1), 0.0))) / a_up
    return Lift(p1 / p2 - 1.0, low - 1.0, high - 1.0)


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
