"""What a drift report is judged by and what it returns: the thresholds (DriftThresholds) and the typed results
(HypothesisTest, NoiseFloor, FeatureDrift, PrevalenceDrift, DriftResult), computed in analysis.drift."""

from __future__ import annotations

from dataclasses import dataclass

from . import drift_stats as ds
from .rates import Rate


@dataclass(frozen=True, slots=True)
class DriftThresholds:
    """Drift thresholds (defaults: PSI 0.1 warning / 0.25 alert, JS 0.1, KS/χ² p < 0.01 after BH)."""

    psi_warning: float = 0.1
    psi_alert: float = 0.25
    js: float = 0.1
    wasserstein: float | None = None
    """Normalised Wasserstein threshold (in reference standard deviations); None = reported only."""
    alpha: float = 0.01
    """Per-report false-alarm rate: the level of the report's one Benjamini–Hochberg family, so under no drift at
    most this share of reports call anything drifted (BH = Simes under the global null; sparse χ² tables get
    permutation p-values so every p-value is valid at small windows). Verified by simulation (tests/drift_sim)."""
    prevalence_change: float = 0.2
    """Relative prevalence change (|current/reference − 1|) needed, with significance, to call prevalence drift."""
    psi_eps: float = ds.PSI_EPS
    floor_draws: int = 200
    seed: int = 0

    def to_json(self) -> dict[str, float | int | None]:
        return {"psi_warning": self.psi_warning, "psi_alert": self.psi_alert, "js": self.js,
                "wasserstein": self.wasserstein, "alpha": self.alpha,
                "prevalence_change": self.prevalence_change, "psi_eps": self.psi_eps,
                "floor_draws": self.floor_draws, "seed": self.seed}


@dataclass(frozen=True, slots=True)
class HypothesisTest:
    """A KS or χ² test: statistic, raw and BH-adjusted p-value, plus test-specific details."""

    stat: float
    p_value: float
    p_adjusted: float | None = None
    dof: int | None = None
    stat_frozen: float | None = None
    stat_upper: float | None = None
    n_effective: int | None = None

    def to_json(self) -> dict[str, float | int | None]:
        d: dict[str, float | int | None] = {"stat": self.stat, "p_value": self.p_value, "p_adjusted": self.p_adjusted}
        if self.dof is not None:
            d["dof"] = self.dof
        if self.stat_upper is not None:
            d |= {"stat_frozen": self.stat_frozen, "stat_upper": self.stat_upper, "n_effective": self.n_effective}
        return d


@dataclass(frozen=True, slots=True)
class NoiseFloor:
    """95th percentile of each statistic under no drift at these sample sizes (None when not applicable)."""

    psi: float | None = None
    js: float | None = None
    ks: float | None = None
    chi2: float | None = None
    wasserstein: float | None = None
    psi_expected: float | None = None

    def to_json(self) -> dict[str, float | None]:
        return {"psi": self.psi, "js": self.js, "ks": self.ks, "chi2": self.chi2,
                "wasserstein": self.wasserstein, "psi_expected": self.psi_expected}


@dataclass(frozen=True, slots=True)
class FeatureDrift:
    """Drift of one feature (or the score) against its reference; statistics None when a side is empty."""

    feature: str
    kind: str
    n_reference: int
    n_current: int
    psi: float | None = None
    js: float | None = None
    ks: HypothesisTest | None = None
    chi2: HypothesisTest | None = None
    missing_test: HypothesisTest | None = None
    """Numeric features: χ² of the [numeric, non-numeric, missing] shares, reference vs current."""
    wasserstein: float | None = None
    missing_reference: float | None = None
    missing_current: float | None = None
    unseen_share: float | None = None
    unseen_values: tuple[tuple[str, int], ...] = ()
    """Categorical: the most frequent current categories the reference never saw, with their counts."""
    unseen_bound: tuple[int, int | None] | None = None
    """(categories remembered, distinct) when the reference remembered only its most frequent ones: unseen_* are then
    the values outside those, an upper bound of the never-seen share. None: every reference category is remembered."""
    noise_floor: NoiseFloor = NoiseFloor()
    drifted: bool = False
    severity: str = "none"
    bins: tuple[str, ...] = ()
    ref_counts: tuple[int, ...] = ()
    cur_counts: tuple[int, ...] = ()

    def tests(self) -> tuple[HypothesisTest, ...]:
        return tuple(t for t in (self.ks, self.chi2, self.missing_test) if t is not None)

    def to_json(self) -> dict[str, object]:
        nr, nc = sum(self.ref_counts), sum(self.cur_counts)
        return {
            "feature": self.feature, "kind": self.kind, "psi": self.psi, "js": self.js,
            "ks": None if self.ks is None else self.ks.to_json(),
            "chi2": None if self.chi2 is None else self.chi2.to_json(),
            "wasserstein": self.wasserstein,
            "missing_share": {"reference": self.missing_reference, "current": self.missing_current,
                              "p_value": None if self.missing_test is None else self.missing_test.p_value,
                              "p_adjusted": None if self.missing_test is None else self.missing_test.p_adjusted},
            "unseen_share": self.unseen_share,
            "unseen_values": [{"value": v, "count": n} for v, n in self.unseen_values],
            "unseen_exact": self.unseen_bound is None, "unseen_bound": None if self.unseen_bound is None else
            {"remembered": self.unseen_bound[0], "reference_distinct": self.unseen_bound[1]},
            "noise_floor": self.noise_floor.to_json(),
            "drifted": self.drifted, "severity": self.severity,
            "n_reference": self.n_reference, "n_current": self.n_current,
            "bins": [{"bin": b, "reference": r / nr if nr else None, "current": c / nc if nc else None}
                     for b, r, c in zip(self.bins, self.ref_counts, self.cur_counts)],
        }


@dataclass(frozen=True, slots=True)
class PrevalenceDrift:
    """Current label prevalence (Wilson) vs the reference, with the Newcombe interval of the change.

    drifted when the two-proportion test (pooled score test = χ² on the 2×2 table, which counts the
    reference's own sampling noise) has BH-adjusted p < alpha — in drift_report it joins the features'
    family — and the relative change is at least DriftThresholds.prevalence_change (20 %), so huge
    windows do not flag negligible shifts.
    """

    reference: float | None
    reference_n: int
    current: Rate
    difference: tuple[float, float, float] | None
    p_value: float | None = None
    p_adjusted: float | None = None
    material: bool = False
    drifted: bool = False

    def to_json(self) -> dict[str, object]:
        cur = self.current.to_json()
        diff = None if self.difference is None else dict(zip(("value", "low", "high"), self.difference))
        return {"reference": self.reference, "reference_n": self.reference_n, "current": cur,
                "difference": diff, "p_value": self.p_value, "p_adjusted": self.p_adjusted,
                "drifted": self.drifted}


@dataclass(frozen=True, slots=True)
class DriftResult:
    """Drift report: features ranked by severity then PSI, the score, prevalence and the thresholds used."""

    features: tuple[FeatureDrift, ...]
    score: FeatureDrift | None
    prevalence: PrevalenceDrift
    thresholds: DriftThresholds
    untracked: tuple[str, ...] = ()

    @property
    def drifted(self) -> tuple[str, ...]:
        return tuple(f.feature for f in self.features if f.drifted)

    def to_json(self) -> dict[str, object]:
        return {"features": [f.to_json() for f in self.features],
                "score": None if self.score is None else self.score.to_json(),
                "prevalence": self.prevalence.to_json(), "thresholds": self.thresholds.to_json(),
                "untracked": list(self.untracked)}
