"""Calibration from fine score histograms: reliability tables (equal-width and equal-mass) with ECE,
Brier score and its Murphy decomposition, the ECE noise floor, and one-parameter temperature scaling.

Every function reads only the labelled rows (NEG, POS) of a window's BucketStats. Coarse calibration
bins are unions of fine bins of grids.SCORE_EDGES, so per-bin counts, score sums and positive counts
are exact; only quantities needing individual scores inside a fine bin (the noise floor's Bernoulli
probabilities, temperature-scaled log loss) use the fine bin's mean score (bins are 0.01 wide in logit).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import expit, log_expit, logit

from ..core.grids import N_SCORE_BINS, SCORE_EDGES
from ..core.stats import LOG_EPS, NEG, POS, SUM_NLL_NEG, SUM_NLL_POS, SUM_P2, BucketStats
from .rates import Rate, rate

STRATEGIES = ("width", "mass")
"""Calibration bin strategies: equal-width score intervals, or equal labelled counts per bin."""


@dataclass(frozen=True, slots=True)
class ReliabilityBin:
    """One calibration bin: mean predicted score vs observed positive share, with counts."""

    low: float
    high: float
    n: int
    mean_score: float | None
    observed: Rate

    def to_json(self) -> dict[str, object]:
        return {"low": self.low, "high": self.high, "n": self.n, "mean_score": self.mean_score,
                "observed": self.observed.to_json()}


@dataclass(frozen=True, slots=True)
class ReliabilityTable:
    """Reliability table of labelled predictions and the ECE it implies (None when no labels)."""

    strategy: str
    bins: tuple[ReliabilityBin, ...]
    ece: float | None
    n: int

    def to_json(self) -> dict[str, object]:
        return {"strategy": self.strategy, "ece": self.ece, "n": self.n,
                "bins": [b.to_json() for b in self.bins]}


@dataclass(frozen=True, slots=True)
class _Labelled:
    """Per-fine-bin arrays of the labelled predictions (NEG + POS rows)."""

    counts: np.ndarray
    psums: np.ndarray
    pos: np.ndarray
    pos_psums: np.ndarray

    @property
    def total(self) -> int:
        return int(self.counts.sum())


def _labelled(stats: BucketStats) -> _Labelled:
    return _Labelled(stats.hist[NEG] + stats.hist[POS], stats.psum[NEG] + stats.psum[POS],
                     stats.hist[POS], stats.psum[POS])


def _equal_width_groups(n_bins: int) -> np.ndarray:
    """Fine-bin index boundaries for n equal-width bins (exact: the score grid holds the edges)."""
    cuts = [int(np.searchsorted(SCORE_EDGES, i / n_bins - 1e-12, side="left")) for i in range(n_bins + 1)]
    cuts[0], cuts[-1] = 0, len(SCORE_EDGES) - 1
    return np.asarray(cuts)


def _equal_mass_groups(counts: np.ndarray, n_bins: int) -> np.ndarray:
    """Fine-bin index boundaries giving ~equal counts per bin; fine bins are never split, empty bins dropped."""
    cum = np.concatenate(([0], np.cumsum(counts)))
    total = int(cum[-1])
    if total == 0:
        return np.asarray([0, N_SCORE_BINS])
    targets = total * np.arange(1, n_bins) / n_bins
    upper = np.searchsorted(cum, targets, side="left")  # first edge with cum >= target
    lower = np.maximum(upper - 1, 0)
    chosen = np.where(targets - cum[lower] < cum[upper] - targets, lower, upper)
    kept = [0]
    for c in np.unique(chosen):
        if cum[kept[-1]] < cum[c] < total:
            kept.append(int(c))
    kept.append(N_SCORE_BINS)
    return np.asarray(kept)


def _cuts(lab: _Labelled, n_bins: int, strategy: str) -> np.ndarray:
    if n_bins < 1:
        raise ValueError("n_bins must be >= 1")
    if strategy == "width":
        return _equal_width_groups(n_bins)
    if strategy == "mass":
        return _equal_mass_groups(lab.counts, n_bins)
    raise ValueError(f"unknown calibration strategy {strategy!r}; expected one of {STRATEGIES}")


def _group_sums(values: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    """Sum of a per-fine-bin array over each coarse bin [cuts[i], cuts[i+1])."""
    cum = np.concatenate(([0], np.cumsum(values, axis=-1)))
    return cum[cuts[1:]] - cum[cuts[:-1]]


def _table(lab: _Labelled, cuts: np.ndarray, strategy: str, n_bins: int) -> ReliabilityTable:
    ns = _group_sums(lab.counts, cuts).astype(np.int64)
    ss = _group_sums(lab.psums, cuts)
    ks = _group_sums(lab.pos, cuts).astype(np.int64)
    total = lab.total
    bins: list[ReliabilityBin] = []
    for i in range(len(cuts) - 1):
        n, k = int(ns[i]), int(ks[i])
        if strategy == "width":
            low, high = i / n_bins, (i + 1) / n_bins
        else:
            low, high = float(SCORE_EDGES[cuts[i]]), float(SCORE_EDGES[cuts[i + 1]])
        bins.append(ReliabilityBin(low, high, n, float(ss[i] / n) if n else None, rate(k, n)))
    ece = float(np.abs(ss - ks).sum() / total) if total else None
    return ReliabilityTable(strategy, tuple(bins), ece, total)


def reliability_table(stats: BucketStats, n_bins: int = 10) -> ReliabilityTable:
    """Equal-width reliability table over labelled predictions; ECE = Σ (n_b/N)|mean score − observed|.

    Bins are [lo, hi), the last closed at 1 (scikit-learn's calibration_curve uses (lo, hi]; the two
    differ only for scores exactly on an edge). Edges are exact when i/n_bins lies on the score grid
    (n_bins dividing 10), otherwise they are the nearest fine edge at or above i/n_bins.
    """
    lab = _labelled(stats)
    return _table(lab, _cuts(lab, n_bins, "width"), "width", n_bins)


def reliability_table_mass(stats: BucketStats, n_bins: int = 10) -> ReliabilityTable:
    """Equal-mass reliability table: cuts on the fine grid so each bin holds ~N/n_bins labelled predictions.

    A fine bin is never split, so heavy fine bins make bins unequal, and bins that would be empty are
    dropped (fewer than n_bins bins). Each bin's low/high are its fine-grid score edges.
    """
    lab = _labelled(stats)
    return _table(lab, _cuts(lab, n_bins, "mass"), "mass", n_bins)


def reliability(stats: BucketStats, n_bins: int = 10, strategy: str = "width") -> ReliabilityTable:
    """Reliability table with the given bin strategy ("width" or "mass")."""
    lab = _labelled(stats)
    return _table(lab, _cuts(lab, n_bins, strategy), strategy, n_bins)


# --- Brier score ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class BrierDecomposition:
    """Brier score (exact, from the sums) and its Murphy decomposition on the binned data.

    brier = reliability − resolution + uncertainty + within_bin_variance − within_bin_covariance holds
    exactly; the last two terms (forecast spread inside each bin) vanish as bins narrow, leaving the
    classic three-term decomposition. skill = 1 − brier/uncertainty (None when uncertainty is 0).
    """

    brier: float | None
    reliability: float | None
    resolution: float | None
    uncertainty: float | None
    within_bin_variance: float | None
    within_bin_covariance: float | None
    skill: float | None
    n: int
    n_bins: int
    strategy: str

    def to_json(self) -> dict[str, object]:
        return {"brier": self.brier, "reliability": self.reliability, "resolution": self.resolution,
                "uncertainty": self.uncertainty, "within_bin_variance": self.within_bin_variance,
                "within_bin_covariance": self.within_bin_covariance, "skill": self.skill, "n": self.n,
                "n_bins": self.n_bins, "strategy": self.strategy, "decomposition": "binned"}


def brier_score(stats: BucketStats) -> float | None:
    """Exact Brier score of labelled predictions: (Σ_pos (1−p)² + Σ_neg p²)/N, with Σ_pos (1−p)² = n − 2Σp + Σp²."""
    n_pos, n = int(stats.hist[POS].sum()), int(stats.hist[NEG].sum() + stats.hist[POS].sum())
    if n == 0:
        return None
    sq = n_pos - 2.0 * float(stats.psum[POS].sum()) + float(stats.sums[POS, SUM_P2] + stats.sums[NEG, SUM_P2])
    return sq / n


def brier_decomposition(stats: BucketStats, n_bins: int = 10, strategy: str = "width") -> BrierDecomposition:
    """Brier score with reliability − resolution + uncertainty from the calibration bins (why it is good or bad)."""
    lab = _labelled(stats)
    cuts = _cuts(lab, n_bins, strategy)
    total = lab.total
    if total == 0:
        return BrierDecomposition(None, None, None, None, None, None, None, 0, n_bins, strategy)
    ns = _group_sums(lab.counts, cuts).astype(np.float64)
    ss = _group_sums(lab.psums, cuts)
    ks = _group_sums(lab.pos, cuts).astype(np.float64)
    sp = _group_sums(lab.pos_psums, cuts)
    nz = ns > 0
    ns, ss, ks, sp = ns[nz], ss[nz], ks[nz], sp[nz]
    base = float(ks.sum() / total)
    rel = float(np.sum((ss - ks) ** 2 / ns) / total)
    res = float(np.sum(ns * (ks / ns - base) ** 2) / total)
    unc = base * (1.0 - base)
    sum_p2 = float(stats.sums[NEG, SUM_P2] + stats.sums[POS, SUM_P2])
    wbv = (sum_p2 - float(np.sum(ss * ss / ns))) / total
    wbc = 2.0 * float(np.sum(sp - ks * ss / ns)) / total
    brier = brier_score(stats)
    skill = 1.0 - brier / unc if unc > 0 and brier is not None else None
    return BrierDecomposition(brier, rel, res, unc, wbv, wbc, skill, total, n_bins, strategy)


# --- ECE noise floor ----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class EceNoiseFloor:
    """ECE a perfectly calibrated model would show at this n and binning (labels resampled from its scores).

    beyond_floor is True when the observed ECE exceeds the 95th percentile of the floor.
    """

    ece: float | None
    mean: float | None
    p95: float | None
    draws: int
    seed: int
    n: int
    n_bins: int
    strategy: str

    @property
    def beyond_floor(self) -> bool | None:
        """True when the observed ECE is above the floor's 95th percentile (None without labels)."""
        if self.ece is None or self.p95 is None:
            return None
        return bool(self.ece > self.p95)

    def to_json(self) -> dict[str, object]:
        return {"ece": self.ece, "mean": self.mean, "p95": self.p95, "beyond_floor": self.beyond_floor,
                "draws": self.draws, "seed": self.seed, "n": self.n, "n_bins": self.n_bins,
                "strategy": self.strategy, "method": "resample labels y ~ Bernoulli(fine-bin mean score)"}


def ece_noise_floor(stats: BucketStats, n_bins: int = 10, strategy: str = "width",
                    draws: int = 200, seed: int = 0) -> EceNoiseFloor:
    """ECE under perfect calibration at this sample size (seed 003): mean and 95th percentile over draws.

    Bins are fixed from the observed data; for each fine bin, the number of positives among its c labelled
    predictions is drawn as Binomial(c, mean score) (one vectorised draw per fine bin, not per prediction;
    exact up to the score spread inside a 0.01-logit fine bin), then ECE = Σ_b |Σ_b p − Σ_b y| / N.
    """
    lab = _labelled(stats)
    cuts = _cuts(lab, n_bins, strategy)
    total = lab.total
    observed = _table(lab, cuts, strategy, n_bins).ece
    if total == 0:
        return EceNoiseFloor(None, None, None, draws, seed, 0, n_bins, strategy)
    idx = np.flatnonzero(lab.counts)
    c = lab.counts[idx]
    m = np.clip(lab.psums[idx] / c, 0.0, 1.0)
    group = np.searchsorted(cuts, idx, side="right") - 1
    n_groups = len(cuts) - 1
    onehot = np.zeros((len(idx), n_groups))
    onehot[np.arange(len(idx)), group] = 1.0
    rng = np.random.default_rng(seed)
    k = rng.binomial(c, m, size=(draws, len(idx))).astype(np.float64)
    ss = _group_sums(lab.psums, cuts)
    eces = np.abs(ss[None, :] - k @ onehot).sum(axis=1) / total
    return EceNoiseFloor(observed, float(eces.mean()), float(np.percentile(eces, 95)), draws, seed,
                         total, n_bins, strategy)


# --- temperature scaling ------------------------------------------------------------------------
TAU_BOUNDS = (0.05, 20.0)
"""Search range for the temperature; a fit at a bound is reported as such."""


@dataclass(frozen=True, slots=True)
class TemperatureFit:
    """One-parameter temperature scaling p' = sigmoid(logit(p)/tau) fitted by log loss, as a suggestion.

    log_loss_before is exact (from the sums); log_loss_after and ece_after use fine-bin mean scores, and
    binning_error = |exact − fine-bin log loss| at tau = 1 says how much to trust that approximation.
    """

    tau: float | None
    log_loss_before: float | None
    log_loss_after: float | None
    ece_before: float | None
    ece_after: float | None
    binning_error: float | None
    at_bound: bool
    n: int

    def to_json(self) -> dict[str, object]:
        return {"tau": self.tau, "log_loss_before": self.log_loss_before,
                "log_loss_after": self.log_loss_after, "ece_before": self.ece_before,
                "ece_after": self.ece_after, "binning_error": self.binning_error,
                "at_bound": self.at_bound, "n": self.n, "suggestion": True}


def log_loss(stats: BucketStats) -> float | None:
    """Exact log loss of labelled predictions from the sums (p clipped to [eps, 1−eps] as in scikit-learn)."""
    n = int(stats.hist[NEG].sum() + stats.hist[POS].sum())
    if n == 0:
        return None
    return float(stats.sums[POS, SUM_NLL_POS] + stats.sums[NEG, SUM_NLL_NEG]) / n


def _bin_logits(stats: BucketStats, state: int) -> tuple[np.ndarray, np.ndarray]:
    """Logit of each non-empty fine bin's mean score in one label state, with its count."""
    idx = np.flatnonzero(stats.hist[state])
    w = stats.hist[state, idx].astype(np.float64)
    p = np.clip(stats.psum[state, idx] / w, LOG_EPS, 1.0 - LOG_EPS)
    return logit(p), w


def fit_temperature(stats: BucketStats, n_bins: int = 10,
                    bounds: tuple[float, float] = TAU_BOUNDS) -> TemperatureFit:
    """Fit tau minimising count-weighted log loss of sigmoid(logit(p)/tau) over fine bins (scipy, bounded).

    tau > 1 means the model is overconfident (scaling pulls scores to 0.5). Ranking is unchanged. tau is
    None without both classes (log loss then has no interior minimum). ECE before/after are equal-width.
    """
    n_pos, n_neg = int(stats.hist[POS].sum()), int(stats.hist[NEG].sum())
    n = n_pos + n_neg
    before = log_loss(stats)
    ece_before = reliability_table(stats, n_bins).ece
    if n_pos == 0 or n_neg == 0:
        return TemperatureFit(None, before, None, ece_before, None, None, False, n)
    z_pos, w_pos = _bin_logits(stats, POS)
    z_neg, w_neg = _bin_logits(stats, NEG)

    def loss(tau: float) -> float:
        return float(-(w_pos @ log_expit(z_pos / tau) + w_neg @ log_expit(-z_neg / tau)) / n)

    from scipy.optimize import minimize_scalar  # lazy: only this fit needs scipy.optimize (issue 17)

    lo, hi = math.log(bounds[0]), math.log(bounds[1])
    res = minimize_scalar(lambda u: loss(math.exp(u)), bounds=(lo, hi), method="bounded",
                          options={"xatol": 1e-7})
    tau = float(math.exp(res.x))
    at_bound = bool(min(res.x - lo, hi - res.x) < 1e-3)
    binning_error = abs(before - loss(1.0)) if before is not None else None
    return TemperatureFit(tau, before, loss(tau), ece_before, _ece_scaled(stats, tau, n_bins),
                          binning_error, at_bound, n)


def _ece_scaled(stats: BucketStats, tau: float, n_bins: int) -> float:
    """Equal-width ECE after temperature scaling, each fine bin moved as a point at its mean score."""
    z_pos, w_pos = _bin_logits(stats, POS)
    z_neg, w_neg = _bin_logits(stats, NEG)
    p = np.concatenate((expit(z_pos / tau), expit(z_neg / tau)))
    w = np.concatenate((w_pos, w_neg))
    y = np.concatenate((w_pos, np.zeros_like(w_neg)))
    b = np.clip(np.floor(p * n_bins).astype(np.int64), 0, n_bins - 1)
    gaps = np.bincount(b, weights=p * w, minlength=n_bins) - np.bincount(b, weights=y, minlength=n_bins)
    return float(np.abs(gaps).sum() / w.sum())


# --- everything at once -------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class CalibrationReport:
    """Calibration of a window: both reliability tables, their noise floors, Brier, log loss and tau."""

    width: ReliabilityTable
    mass: ReliabilityTable
    floor_width: EceNoiseFloor
    floor_mass: EceNoiseFloor
    brier: BrierDecomposition
    temperature: TemperatureFit

    def to_json(self) -> dict[str, object]:
        return {"n": self.width.n,
                "ece": {"width": self.width.ece, "mass": self.mass.ece},
                "reliability": {"width": self.width.to_json(), "mass": self.mass.to_json()},
                "noise_floor": {"width": self.floor_width.to_json(), "mass": self.floor_mass.to_json()},
                "brier": self.brier.to_json(), "log_loss": self.temperature.log_loss_before,
                "temperature": self.temperature.to_json()}


def calibration_report(stats: BucketStats, n_bins: int = 10, draws: int = 200, seed: int = 0) -> CalibrationReport:
    """All calibration results of a window, for `driftline calibration` and reports."""
    return CalibrationReport(
        reliability(stats, n_bins, "width"), reliability(stats, n_bins, "mass"),
        ece_noise_floor(stats, n_bins, "width", draws, seed), ece_noise_floor(stats, n_bins, "mass", draws, seed),
        brier_decomposition(stats, n_bins, "width"), fit_temperature(stats, n_bins),
    )
