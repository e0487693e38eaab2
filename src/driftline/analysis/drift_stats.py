"""Two-sample distribution-shift statistics on binned counts, and their no-drift noise floors.

Pure numpy/scipy functions on count arrays (no per-value loops): PSI, Jensen–Shannon distance,
Kolmogorov–Smirnov on fine-grid CDFs with its exact bracketing bound, χ² contingency test,
Wasserstein-1 on bin midpoints, Benjamini–Hochberg, and the Newcombe interval for a change in a
proportion. Noise floors are 95th percentiles of a statistic under no drift at the given sample sizes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.spatial.distance import jensenshannon
from scipy.stats import (chi2, chi2_contingency, false_discovery_control, kstwo, kstwobign, norm,
                         wasserstein_distance)

from .abstats import newcombe_interval
from .rates import Z95

PSI_EPS = 1e-4
"""Empty-bin floor of PSI: both proportions are floored at 1e-4 before the difference and the log."""
NOISE_QUANTILE = 0.95
"""Noise floors are this quantile of the statistic under no drift (a 5 %-level call per statistic)."""
KS_EXACT_MAX_N = 1000
"""Up to this effective n the KS p-value is scipy's kstwo (as ks_2samp method="asymp"); above, Stephens."""


# --- PSI and Jensen–Shannon --------------------------------------------------------------------
def psi(ref: np.ndarray, cur: np.ndarray, eps: float = PSI_EPS) -> np.ndarray | float:
    """Population stability index Σ (q−p)·ln(q/p) of count rows (last axis = bins).

    p, q are the reference and current proportions, each floored at `eps` (default 1e-4) before the
    difference and the log, so an empty bin contributes a large but finite term. Not renormalised.
    """
    r = np.asarray(ref, dtype=np.float64)
    c = np.asarray(cur, dtype=np.float64)
    p = np.maximum(r / r.sum(axis=-1, keepdims=True), eps)
    q = np.maximum(c / c.sum(axis=-1, keepdims=True), eps)
    out = np.sum((q - p) * np.log(q / p), axis=-1)
    return float(out) if np.ndim(out) == 0 else out


def js_distance(ref: np.ndarray, cur: np.ndarray) -> np.ndarray | float:
    """Jensen–Shannon distance in bits (0 … 1) of count rows; scipy.spatial.distance.jensenshannon base 2."""
    out = jensenshannon(np.asarray(ref, np.float64), np.asarray(cur, np.float64), base=2, axis=-1)
    out = np.nan_to_num(np.asarray(out, dtype=np.float64))  # identical rows can give sqrt(-0.0) rounding
    return float(out) if out.ndim == 0 else out


def psi_expected(n_bins: int, n_ref: int, n_cur: int) -> float:
    """Analytic E[PSI] under no drift, (k−1)(1/n_ref + 1/n_cur) for k populated bins.

    Second-order expansion: PSI ≈ Σ (q−p)²/π over the k bins, and (q−p) has variance
    π(1−π)(1/n_ref + 1/n_cur), so PSI·(1/n_ref+1/n_cur)⁻¹ is asymptotically χ²_{k−1}. Ignores the
    ε floor on empty bins, so it underestimates when bins hold only a few counts (n ≲ 50 per bin). k counts the
    bins the reference populated: a bin it left empty (other, missing, underflow, overflow) has a no-drift share
    near 1/n_ref, where the expansion does not hold and the ε floor keeps its term near 0 (counted, a boolean
    feature's expected PSI read 2.1 × the simulated mean).
    """
    return max(n_bins - 1, 0) * (1.0 / n_ref + 1.0 / n_cur)


def multinomial_floors(p_ref: np.ndarray, p_cur: np.ndarray, n_ref: int, n_cur: int, draws: int,
                       rng: np.random.Generator, eps: float = PSI_EPS) -> tuple[float, float]:
    """95th-percentile PSI and JS over `draws` seeded no-drift resamples of both samples.

    ref ~ Mult(n_ref, p_ref), cur ~ Mult(n_cur, p_cur): O(draws × bins), independent of the event
    count. p_cur is p_ref, or p_ref plus the tail mass a current sample has outside the reference
    range (see drift.numeric_drift).
    """
    r = rng.multinomial(n_ref, p_ref, size=draws)
    c = rng.multinomial(n_cur, p_cur, size=draws)
    return (float(np.quantile(psi(r, c, eps), NOISE_QUANTILE)),
            float(np.quantile(js_distance(r, c), NOISE_QUANTILE)))


# --- chi-squared ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Chi2:
    """Pearson χ² test of homogeneity on a 2×k table (reference vs current)."""

    stat: float
    p_value: float
    dof: int


def chi2_test(ref: np.ndarray, cur: np.ndarray) -> Chi2:
    """scipy chi2_contingency(correction=False) on [ref; cur] after dropping all-zero columns (needs n > 0 in both).

    With a single populated column the samples are identical: stat 0, p 1, dof 0.
    """
    table = np.vstack([ref, cur]).astype(np.float64)
    table = table[:, table.sum(axis=0) > 0]
    if table.shape[1] < 2:
        return Chi2(0.0, 1.0, 0)
    res = chi2_contingency(table, correction=False)
    return Chi2(float(res.statistic), float(res.pvalue), int(res.dof))


SPARSE_EXPECTED = 5.0
"""Below this expected count in any cell the asymptotic χ² p-value is too small (anti-conservative): the
Monte-Carlo permutation p-value is used instead (Cochran's rule)."""
MC_DRAWS = (2_000, 50_000)
"""Permutation draws of the sparse χ² test: a first pass, and a refined pass when its p-value is small."""


def _chi2_stats(sim: np.ndarray, cols: np.ndarray, n_ref: int, n_cur: int) -> np.ndarray:
    """Pearson χ² of 2×k tables [cols − sim; sim] (rows of sim are the current sample's counts)."""
    total = n_ref + n_cur
    e_cur, e_ref = cols * (n_cur / total), cols * (n_ref / total)
    return (((sim - e_cur) ** 2 / e_cur).sum(axis=-1) + (((cols - sim) - e_ref) ** 2 / e_ref).sum(axis=-1))


def chi2_test_sparse(ref: np.ndarray, cur: np.ndarray, rng: np.random.Generator) -> Chi2:
    """chi2_test, with the exact-conditional (permutation) p-value by Monte Carlo when an expected count is
    below SPARSE_EXPECTED: the current row drawn from the multivariate hypergeometric given the column totals,
    p = (1 + #{χ²_sim ≥ χ²_obs}) / (1 + draws), which is valid at every sample size (seeded, so repeatable)."""
    res = chi2_test(ref, cur)
    if res.dof == 0:
        return res
    r, c = np.asarray(ref, np.int64), np.asarray(cur, np.int64)
    keep = (r + c) > 0
    r, c = r[keep], c[keep]
    cols, n_r, n_c = r + c, int(r.sum()), int(c.sum())
    if float((np.minimum(n_r, n_c) * cols / (n_r + n_c)).min()) >= SPARSE_EXPECTED:
        return res
    obs = float(_chi2_stats(c.astype(np.float64), cols.astype(np.float64), n_r, n_c))
    p = 1.0
    for draws in MC_DRAWS:
        sim = rng.multivariate_hypergeometric(cols, n_c, size=draws).astype(np.float64)
        hits = int(np.count_nonzero(_chi2_stats(sim, cols.astype(np.float64), n_r, n_c) >= obs * (1 - 1e-12)))
        p = (1.0 + hits) / (1.0 + draws)
        if p > 0.01:  # refine only p-values that could matter after multiple-testing adjustment
            break
    return Chi2(res.stat, p, res.dof)


def chi2_critical(dof: int) -> float | None:
    """χ² value with a 5 % upper tail: the test statistic's no-drift floor (None when dof = 0)."""
    return float(chi2.isf(1.0 - NOISE_QUANTILE, dof)) if dof > 0 else None


# --- Kolmogorov–Smirnov ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class KsFine:
    """KS distance between two fine-binned samples and the exact bracket of the raw-data KS.

    stat = max |F−G| at fine-bin edges (= ks_2samp on the bin representatives) ≤ raw KS ≤ upper,
    upper = max over fine bins j of max(F_{j+1} − G_j, G_{j+1} − F_j) (CDFs after/before bin j),
    which is ≤ stat + the largest single-fine-bin probability mass of either sample.
    """

    stat: float
    upper: float
    max_bin_mass: float


def ks_fine(ref_idx: np.ndarray, ref_cnt: np.ndarray, cur_idx: np.ndarray, cur_cnt: np.ndarray) -> KsFine:
    """KS statistic of two samples given as sorted fine-bin indices with counts (both non-empty)."""
    u = np.union1d(ref_idx, cur_idx)
    f = np.zeros(len(u))
    g = np.zeros(len(u))
    f[np.searchsorted(u, ref_idx)] = ref_cnt / ref_cnt.sum()
    g[np.searchsorted(u, cur_idx)] = cur_cnt / cur_cnt.sum()
    fa, ga = np.cumsum(f), np.cumsum(g)
    fb, gb = fa - f, ga - g
    stat = float(np.max(np.abs(fa - ga)))
    upper = float(max(np.max(fa - gb), np.max(ga - fb)))
    return KsFine(stat, max(upper, stat), float(max(f.max(), g.max())))


def ks_cdf_stat(ref: np.ndarray, cur: np.ndarray) -> float:
    """KS distance between two count vectors over the same ordered bins (max |ΔCDF| at bin edges)."""
    return float(np.max(np.abs(np.cumsum(ref) / ref.sum() - np.cumsum(cur) / cur.sum())))


def ks_n_effective(n_ref: int, n_cur: int) -> int:
    """Effective sample size n·m/(n+m) of the two-sample KS, rounded as scipy.stats.ks_2samp does."""
    return int(np.round(n_ref * n_cur / (n_ref + n_cur)))


def ks_p_value(stat: float, n_ref: int, n_cur: int) -> float:
    """Asymptotic two-sided two-sample KS p-value: kstwo.sf(D, n_eff) as ks_2samp(method="asymp").

    Above n_eff = 1000 scipy's kstwo.sf costs up to seconds, so Stephens' form of the same limit is
    used: kstwobign.sf((√n + 0.12 + 0.11/√n)·D), within 2 % of kstwo for p > 1e-3.
    """
    en = ks_n_effective(n_ref, n_cur)
    if en <= KS_EXACT_MAX_N:
        return float(min(max(kstwo.sf(stat, max(en, 1)), 0.0), 1.0))
    s = math.sqrt(en)
    return float(min(kstwobign.sf((s + 0.12 + 0.11 / s) * stat), 1.0))


def ks_critical(n_ref: int, n_cur: int) -> float:
    """KS distance with a 5 % upper tail at these sample sizes (Stephens' form): the statistic's no-drift floor."""
    s = math.sqrt(max(ks_n_effective(n_ref, n_cur), 1))
    return float(kstwobign.isf(1.0 - NOISE_QUANTILE) / (s + 0.12 + 0.11 / s))


# --- Wasserstein ----------------------------------------------------------------------------------
def wasserstein_binned(x_ref: np.ndarray, w_ref: np.ndarray, x_cur: np.ndarray, w_cur: np.ndarray) -> float:
    """Wasserstein-1 distance between two weighted point sets (fine-bin midpoints and counts); scipy."""
    return float(wasserstein_distance(x_ref, x_cur, w_ref, w_cur))


def bridge_l1_quantile(counts: np.ndarray, x: np.ndarray, draws: int, rng: np.random.Generator) -> float:
    """95th percentile of ∫|B(F(x))|dx, B a Brownian bridge and F the reference CDF on points x.

    Under no drift √(n·m/(n+m))·W1(F_n, G_m) → ∫|B(F(x))|dx, so the W1 floor is this value times
    √(1/n + 1/m). Simulated on the populated reference bins only: O(draws × bins), seeded; computed
    once per reference profile (profiles.NumericProfile.w_noise).
    """
    if len(counts) < 2:
        return 0.0
    dF = counts / counts.sum()
    F = np.cumsum(dF)
    z = rng.standard_normal((draws, len(dF))) * np.sqrt(dF)
    w = np.cumsum(z, axis=1)
    bridge = w[:, :-1] - F[:-1] * w[:, -1:]
    integral = np.abs(bridge) @ np.diff(x)
    return float(np.quantile(integral, NOISE_QUANTILE))


# --- multiple testing and proportions -------------------------------------------------------------
def bh_adjust(p_values: list[float | None]) -> list[float | None]:
    """Benjamini–Hochberg adjusted p-values over the non-null ones (scipy false_discovery_control)."""
    idx = [i for i, p in enumerate(p_values) if p is not None]
    out: list[float | None] = [None] * len(p_values)
    if idx:
        adj = false_discovery_control(np.array([p_values[i] for i in idx], dtype=np.float64), method="bh")
        for i, a in zip(idx, np.atleast_1d(adj)):
            out[i] = float(a)
    return out


def newcombe_diff(k_cur: int, n_cur: int, k_ref: int, n_ref: int, z: float = Z95) -> tuple[float, float, float]:
    """p_cur − p_ref with the Newcombe hybrid score interval (the A/B readout's, abstats.newcombe_interval)."""
    low, high = newcombe_interval(k_cur, n_cur, k_ref, n_ref, alpha=2.0 * float(norm.sf(z)))
    return k_cur / n_cur - k_ref / n_ref, low, high
