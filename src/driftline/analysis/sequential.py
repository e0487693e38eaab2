"""Peeking-safe (always-valid) intervals for a difference of two proportions (recall, FPR).

Asymptotic confidence sequence (CS) of Waudby-Smith, Arbour, Sinha, Kennedy & Ramdas, "Time-uniform
central limit theory and asymptotic confidence sequences" (Annals of Statistics 2024, arXiv:2103.06476),
with the two-sided normal-mixture (Robbins) boundary:

    C_t = Δ̂_t ± σ̂_t · sqrt( 2(t ρ² + 1) / (t² ρ²) · ln( sqrt(t ρ² + 1) / α ) )

t is the number of observations so far: labelled positives in both arms for recall (labelled
negatives for FPR), Δ̂_t = p̂_T − p̂_C, and σ̂_t² = t · (p̃_T(1−p̃_T)/n_T + p̃_C(1−p̃_C)/n_C) is the
per-observation variance of the difference-in-means estimator (the AIPW form of the paper's
randomised-experiment CS with arm means as the outcome model; t·Var(Δ̂) ≤ 1 for a balanced split).
p̃ = (k+1)/(n+2) keeps a 0/n or n/n arm from giving a zero-width interval; it vanishes asymptotically.

Unlike a fixed-horizon interval, P(∃t: Δ ∉ C_t) ≤ α holds (asymptotically) over all looks, so a daily
look does not inflate false wins. ρ must be fixed before the data: ρ² minimises the width at a planned
t* (= 2 × planned labelled positives per arm), ρ² = (−W₋₁(−α²/e) − 1)/t* ≈ (−2 ln α + ln(1 − 2 ln α))/t*.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import lambertw

PLANNED_POSITIVES_PER_ARM = 500
MIN_PER_ARM = 10
"""Below this many observations in an arm the CS is not reported (None): the CLT has nothing to hold on to."""


def optimal_rho2(t_star: float, alpha: float = 0.05) -> float:
    """ρ² that minimises the normal-mixture boundary width at time t* (exact, via Lambert W₋₁)."""
    x = -float(lambertw(-alpha * alpha / math.e, k=-1).real)
    return (x - 1.0) / t_star


def mixture_margin(t: float, rho2: float, alpha: float = 0.05) -> float:
    """Unit-variance two-sided normal-mixture boundary divided by t: the CS half-width when σ̂ = 1."""
    return math.sqrt(2.0 * (t * rho2 + 1.0) / (t * t * rho2) * math.log(math.sqrt(t * rho2 + 1.0) / alpha))


@dataclass(frozen=True, slots=True)
class SequentialPlan:
    """What the CS is tuned for: planned labelled observations per arm (positives by default) and α."""

    planned_per_arm: float = PLANNED_POSITIVES_PER_ARM
    alpha: float = 0.05

    @property
    def rho2(self) -> float:
        """Mixture tuning ρ², fixed by the plan alone (never by the data), optimal at t* = 2 × planned."""
        return optimal_rho2(2.0 * self.planned_per_arm, self.alpha)

    def for_negatives(self, prevalence: float) -> SequentialPlan:
        """The plan in units of labelled negatives (for FPR): planned × (1 − prevalence)/prevalence."""
        return SequentialPlan(self.planned_per_arm * (1.0 - prevalence) / prevalence, self.alpha)

    def to_json(self) -> dict[str, float]:
        return {"planned_per_arm": self.planned_per_arm, "alpha": self.alpha, "rho2": self.rho2}


@dataclass(frozen=True, slots=True)
class SeqInterval:
    """Always-valid interval for p_T − p_C at one look; low/high None when an arm has < MIN_PER_ARM."""

    diff: float | None
    low: float | None
    high: float | None
    t: int

    @property
    def excludes_zero(self) -> bool:
        """True when the always-valid interval is entirely above or below 0."""
        return self.low is not None and self.high is not None and (self.low > 0 or self.high < 0)

    def to_json(self) -> dict[str, float | int | bool | None]:
        return {"diff": self.diff, "seq_low": self.low, "seq_high": self.high, "t": self.t,
                "excludes_zero": self.excludes_zero}


def cs_difference(k_t: int, n_t: int, k_c: int, n_c: int,
                  plan: SequentialPlan = SequentialPlan()) -> SeqInterval:
    """The asymptotic CS for p_T − p_C from cumulative counts at one look (see the module doc):

    Δ̂ ± σ̂·sqrt(2(tρ²+1)/(t²ρ²)·ln(sqrt(tρ²+1)/α)), t = n_T + n_C, σ̂² = t·Σ p̃(1−p̃)/n, p̃ = (k+1)/(n+2).
    """
    t = n_t + n_c
    if n_t == 0 or n_c == 0:
        return SeqInterval(None, None, None, t)
    diff = k_t / n_t - k_c / n_c
    if min(n_t, n_c) < MIN_PER_ARM:
        return SeqInterval(diff, None, None, t)
    pt, pc = (k_t + 1.0) / (n_t + 2.0), (k_c + 1.0) / (n_c + 2.0)
    sigma = math.sqrt(t * (pt * (1 - pt) / n_t + pc * (1 - pc) / n_c))
    half = sigma * mixture_margin(t, plan.rho2, plan.alpha)
    return SeqInterval(diff, max(-1.0, diff - half), min(1.0, diff + half), t)  # a difference of proportions


def cs_bounds(k_t: np.ndarray, n_t: np.ndarray, k_c: np.ndarray, n_c: np.ndarray,
              plan: SequentialPlan = SequentialPlan()) -> tuple[np.ndarray, np.ndarray]:
    """cs_difference over arrays of cumulative counts (any shape): (low, high), NaN where an arm has fewer
    than MIN_PER_ARM observations. For simulations of many experiments × looks at numpy speed."""
    k_t, n_t, k_c, n_c = (np.asarray(x, dtype=np.float64) for x in (k_t, n_t, k_c, n_c))
    ok = np.minimum(n_t, n_c) >= MIN_PER_ARM
    nt, nc = np.where(ok, n_t, 1.0), np.where(ok, n_c, 1.0)
    k_t, k_c = np.where(ok, k_t, 0.0), np.where(ok, k_c, 0.0)
    t = nt + nc
    pt, pc = (k_t + 1.0) / (nt + 2.0), (k_c + 1.0) / (nc + 2.0)
    sigma = np.sqrt(t * (pt * (1 - pt) / nt + pc * (1 - pc) / nc))
    r2 = plan.rho2
    margin = np.sqrt(2.0 * (t * r2 + 1.0) / (t * t * r2) * np.log(np.sqrt(t * r2 + 1.0) / plan.alpha))
    diff = k_t / nt - k_c / nc
    half = sigma * margin
    return (np.where(ok, np.maximum(-1.0, diff - half), np.nan),  # clipped to [−1, 1] as cs_difference is
            np.where(ok, np.minimum(1.0, diff + half), np.nan))


def cs_from_standard_error(diff: float | None, se: float | None, t: int,
                           plan: SequentialPlan = SequentialPlan()) -> SeqInterval:
    """The same CS for any asymptotically normal difference (e.g. a delta-method cost difference) whose
    fixed-horizon standard error after t observations is se: σ̂ = se·√t, half-width σ̂·margin(t)."""
    if diff is None or se is None or t <= 0:
        return SeqInterval(diff, None, None, t)
    half = se * math.sqrt(t) * mixture_margin(t, plan.rho2, plan.alpha)
    return SeqInterval(diff, diff - half, diff + half, t)


def cs_path(looks: Sequence[tuple[int, int, int, int]], plan: SequentialPlan = SequentialPlan(),
            running_intersection: bool = True) -> tuple[SeqInterval, ...]:
    """The CS at successive looks of cumulative (k_t, n_t, k_c, n_c); optionally the running intersection.

    Intersecting is valid because the CS holds at all looks simultaneously; it keeps intervals nested.
    """
    out: list[SeqInterval] = []
    lo, hi = -math.inf, math.inf
    for k_t, n_t, k_c, n_c in looks:
        s = cs_difference(k_t, n_t, k_c, n_c, plan)
        if running_intersection and s.low is not None and s.high is not None:
            lo, hi = max(lo, s.low), min(hi, s.high)
            if lo > hi:  # empty intersection: the assumptions failed; report the current interval
                lo, hi = s.low, s.high
            s = SeqInterval(s.diff, lo, hi, s.t)
        out.append(s)
    return tuple(out)
