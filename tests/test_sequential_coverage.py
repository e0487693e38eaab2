"""Coverage of the always-valid intervals under repeated looks, simulated (issue 15 §6).

500 simulated experiments per scenario, looked at every day for 8 weeks (56 looks), vectorised with numpy
(cs_bounds, checked against the scalar cs_difference). Under no difference (A/A) the share of experiments whose
always-valid interval ever excludes 0 must stay ≤ 5 %; with a real difference the share whose interval ever
excludes the true difference must stay ≤ 5 %. Reading the fixed-horizon interval every day does not (the
control that shows the simulation can fail).
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from scipy.stats import norm

from driftline.analysis.sequential import SequentialPlan, cs_bounds, cs_difference

EXPERIMENTS = 500
LOOKS = 56  # daily for 8 weeks


def _experiments(seed: int, per_day: float, p_t: float, p_c: float) -> tuple[np.ndarray, ...]:
    """Cumulative (k_t, n_t, k_c, n_c) at each daily look: arrays of shape (EXPERIMENTS, LOOKS); 50/50 split,
    Poisson daily volume of labelled observations (positives for recall, negatives for FPR)."""
    rng = np.random.default_rng(seed)
    total = rng.poisson(per_day, (EXPERIMENTS, LOOKS))
    n_t = rng.binomial(total, 0.5)
    n_c = total - n_t
    k_t, k_c = rng.binomial(n_t, p_t), rng.binomial(n_c, p_c)
    return tuple(np.cumsum(x, axis=1) for x in (k_t, n_t, k_c, n_c))


def _fixed_bounds(k_t, n_t, k_c, n_c) -> tuple[np.ndarray, np.ndarray]:
    """The naive fixed-horizon Wald 95 % interval at every look (what peeking at a fixed interval does)."""
    nt, nc = np.maximum(n_t, 1), np.maximum(n_c, 1)
    pt, pc = k_t / nt, k_c / nc
    se = np.sqrt(pt * (1 - pt) / nt + pc * (1 - pc) / nc)
    z = norm.ppf(0.975)
    return pt - pc - z * se, pt - pc + z * se


def test_vectorised_bounds_equal_the_scalar_cs() -> None:
    plan = SequentialPlan(300)
    k_t, n_t, k_c, n_c = (x[:20, ::7] for x in _experiments(5, 30.0, 0.8, 0.75))
    low, high = cs_bounds(k_t, n_t, k_c, n_c, plan)
    for idx in np.ndindex(low.shape):
        s = cs_difference(int(k_t[idx]), int(n_t[idx]), int(k_c[idx]), int(n_c[idx]), plan)
        if s.low is None:
            assert np.isnan(low[idx])
        else:
            assert (low[idx], high[idx]) == pytest.approx((s.low, s.high), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize(("name", "per_day", "p", "plan"), [
    ("recall, 40 labelled positives a day", 40.0, 0.80, SequentialPlan()),
    ("recall, 8 labelled positives a day", 8.0, 0.70, SequentialPlan(100)),
    ("FPR, 2,000 labelled negatives a day", 2_000.0, 6 / 90, SequentialPlan().for_negatives(0.02)),
    ("alert rate, 5,000 predictions a day", 5_000.0, 0.05, SequentialPlan(500 * 50)),
])
def test_aa_share_ever_excluding_zero_is_at_most_5_percent(name: str, per_day: float, p: float,
                                                          plan: SequentialPlan) -> None:
    cum = _experiments(zlib.crc32(name.encode()), per_day, p, p)
    low, high = cs_bounds(*cum, plan)
    ever = np.any((low > 0) | (high < 0), axis=1)  # NaN (too few observations yet) compares False
    share = ever.mean()
    flo, fhi = _fixed_bounds(*cum)
    naive = np.any((flo > 0) | (fhi < 0), axis=1).mean()
    print(f"{name}: always-valid ever excludes 0 in {share:.1%}; daily fixed-horizon peeking {naive:.1%}")
    assert share <= 0.05, name
    assert naive > 0.10, name  # the control: repeated looks at a fixed interval inflate false wins


@pytest.mark.parametrize(("per_day", "p_t", "p_c"), [(40.0, 0.85, 0.80), (2_000.0, 0.08, 0.06)])
def test_coverage_of_a_real_difference_over_all_looks(per_day: float, p_t: float, p_c: float) -> None:
    """With a true difference the interval must cover it at every look in ≥ 95 % of experiments."""
    cum = _experiments(int(per_day), per_day, p_t, p_c)
    low, high = cs_bounds(*cum, SequentialPlan(500 if per_day < 100 else 500 * 49))
    truth = p_t - p_c
    missed = np.any((low > truth) | (high < truth), axis=1).mean()
    assert missed <= 0.05
