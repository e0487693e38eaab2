"""Shadow mode (paired) comparisons: the same prediction_id scored by control and treatment.

Exact sign test (= exact McNemar) on the discordant pairs for recall (among positives) and FPR (among
negatives), and a seeded paired bootstrap for the recall, precision and cost differences.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import binomtest

from ..core.stats import NEG, POS, UNL
from .abstats import ArmCounts
from .costs import Costs, cost_per_prediction


@dataclass(frozen=True, slots=True)
class PairedTable:
    """counts[label_state, flagged_by_control, flagged_by_treatment] over joined prediction ids (3×2×2)."""

    counts: np.ndarray

    @classmethod
    def from_arrays(cls, labels: np.ndarray, flagged_control: np.ndarray,
                    flagged_treatment: np.ndarray) -> PairedTable:
        """From per-prediction arrays aligned by prediction_id; label 1 = positive, 0 = negative, else unlabelled."""
        y = np.asarray(labels)
        state = np.where(y == 1, POS, np.where(y == 0, NEG, UNL))
        fc = np.asarray(flagged_control, dtype=bool).astype(np.int64)
        ft = np.asarray(flagged_treatment, dtype=bool).astype(np.int64)
        counts = np.bincount(state * 4 + fc * 2 + ft, minlength=12).reshape(3, 2, 2)
        return cls(counts.astype(np.int64))

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    def arm(self, which: str) -> ArmCounts:
        """Marginal confusion counts of 'control' or 'treatment'."""
        conf = self.counts.sum(axis=2 if which == "control" else 1)
        return ArmCounts.from_conf(conf)

    def to_json(self) -> dict[str, object]:
        return {"counts": self.counts.tolist(), "n": self.n}

    def negative_reading(self, matured: PairedTable) -> PairedTable:
        """The table FPR, precision and cost read when only the `matured` pairs (a subset of these) have their
        negatives: their labelled cells, every other pair as unlabelled (its flags still count in the alert rate),
        as ArmCounts.for_costs does per arm (analysis.matured says why)."""
        out = matured.counts.astype(np.int64).copy()
        out[UNL] = self.counts.sum(axis=0) - out[POS] - out[NEG]
        return PairedTable(out)


# --- exact sign test / McNemar ------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SignTest:
    """Exact two-sided sign test on discordant pairs; p is None without discordant pairs."""

    control_only: int
    treatment_only: int
    p_value: float | None

    @property
    def discordant(self) -> int:
        return self.control_only + self.treatment_only

    def to_json(self) -> dict[str, int | float | None]:
        return {"control_only": self.control_only, "treatment_only": self.treatment_only,
                "discordant": self.discordant, "p_value": self.p_value}


def sign_test(control_only: int, treatment_only: int) -> SignTest:
    """Exact binomial test of treatment_only ~ Bin(discordant, ½): McNemar's exact test on a 2×2 table."""
    n = control_only + treatment_only
    p = float(binomtest(treatment_only, n, 0.5).pvalue) if n else None
    return SignTest(control_only, treatment_only, p)


@dataclass(frozen=True, slots=True)
class PairedTests:
    """Sign tests for recall (discordant caught positives) and FPR (discordant flagged negatives)."""

    recall: SignTest
    fpr: SignTest

    def to_json(self) -> dict[str, object]:
        return {"recall": self.recall.to_json(), "fpr": self.fpr.to_json()}


def paired_tests(table: PairedTable) -> PairedTests:
    """Recall: positives caught by one variant only; FPR: negatives flagged by one variant only."""
    c = table.counts
    return PairedTests(sign_test(int(c[POS, 1, 0]), int(c[POS, 0, 1])),
                       sign_test(int(c[NEG, 1, 0]), int(c[NEG, 0, 1])))


# --- bootstrap ----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class BootInterval:
    """Observed treatment − control difference with a percentile bootstrap interval."""

    diff: float | None
    low: float | None
    high: float | None
    n_valid: int

    def to_json(self) -> dict[str, float | int | None]:
        return {"diff": self.diff, "low": self.low, "high": self.high, "n_valid": self.n_valid}


@dataclass(frozen=True, slots=True)
class BootstrapResult:
    """Bootstrap intervals for the recall, precision and cost-per-1,000 differences."""

    paired: bool
    n_boot: int
    seed: int
    recall: BootInterval
    precision: BootInterval
    cost_per_1000: BootInterval | None

    def to_json(self) -> dict[str, object]:
        return {"paired": self.paired, "n_boot": self.n_boot, "seed": self.seed,
                "recall": self.recall.to_json(), "precision": self.precision.to_json(),
                "cost_per_1000": None if self.cost_per_1000 is None else self.cost_per_1000.to_json()}


def _stats(conf: np.ndarray, costs: Costs | None) -> dict[str, np.ndarray]:
    """Recall, precision and cost per 1,000 from conf[..., label_state, flagged] (NaN when undefined)."""
    tp, fn, fp, tn = conf[..., POS, 1], conf[..., POS, 0], conf[..., NEG, 1], conf[..., NEG, 0]
    tp, fn, fp, tn = (x.astype(np.float64) for x in (tp, fn, fp, tn))
    with np.errstate(invalid="ignore", divide="ignore"):
        out = {"recall": tp / (tp + fn), "precision": tp / (tp + fp)}
    if costs is not None:
        out["cost_per_1000"] = 1000.0 * cost_per_prediction(
            conf.sum(axis=(-2, -1)), conf[..., :, 1].sum(axis=-1), tp, fp, fn, tn, costs)
    return out


def _interval(observed: float, draws: np.ndarray, alpha: float) -> BootInterval:
    ok = draws[~np.isnan(draws)]
    if np.isnan(observed) or ok.size == 0:
        return BootInterval(None, None, None, int(ok.size))
    lo, hi = np.percentile(ok, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return BootInterval(float(observed), float(lo), float(hi), int(ok.size))


def paired_bootstrap(table: PairedTable, costs: Costs | None = None, n_boot: int = 2000, seed: int = 0,
                     alpha: float = 0.05, paired: bool = True) -> BootstrapResult:
    """Percentile bootstrap of treatment − control, resampling prediction ids with replacement.

    paired=True draws one resample of ids for both variants (each id keeps its label and both
    decisions); paired=False resamples each variant's ids independently (the unpaired analysis, for
    comparison). Every statistic depends on the data only through the 3×2×2 cell counts, so drawing
    the resampled counts from Multinomial(n, observed cell shares) is the same distribution as
    resampling n ids, at O(n_boot) cost. Seeded by `seed` (numpy default_rng).
    """
    rng = np.random.default_rng(seed)
    c = table.counts.astype(np.int64)
    n = int(c.sum())
    conf_c, conf_t = c.sum(axis=2), c.sum(axis=1)
    obs_c, obs_t = _stats(conf_c, costs), _stats(conf_t, costs)
    if n == 0:
        empty = BootInterval(None, None, None, 0)
        return BootstrapResult(paired, n_boot, seed, empty, empty, empty if costs is not None else None)
    if paired:
        draws = rng.multinomial(n, c.ravel() / n, size=n_boot).reshape(n_boot, 3, 2, 2)
        bc, bt = draws.sum(axis=3), draws.sum(axis=2)
    else:
        bc = rng.multinomial(n, conf_c.ravel() / n, size=n_boot).reshape(n_boot, 3, 2)
        bt = rng.multinomial(n, conf_t.ravel() / n, size=n_boot).reshape(n_boot, 3, 2)
    sc, st = _stats(bc, costs), _stats(bt, costs)
    res = {k: _interval(float(obs_t[k] - obs_c[k]), st[k] - sc[k], alpha) for k in sc}
    return BootstrapResult(paired, n_boot, seed, res["recall"], res["precision"], res.get("cost_per_1000"))
