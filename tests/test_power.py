"""Power of a recall comparison against statsmodels' NormalIndPower and a simulation."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.stats import norm
from statsmodels.stats.power import NormalIndPower
from statsmodels.stats.proportion import proportion_effectsize

from driftline.analysis.power import mde_difference, mde_h, n_per_arm_for, power_h, recall_power


def test_power_and_mde_match_statsmodels() -> None:
    sm = NormalIndPower()
    rng = np.random.default_rng(41)
    for _ in range(20):
        n1 = float(rng.integers(20, 5_000))
        ratio = float(rng.choice([0.5, 1.0, 1.5, 3.0]))
        h = float(rng.uniform(0.02, 0.6))
        assert power_h(h, n1, ratio * n1) == pytest.approx(sm.power(h, n1, 0.05, ratio=ratio), rel=1e-9)
        mde = mde_h(n1, ratio * n1)
        assert sm.power(mde, n1, 0.05, ratio=ratio) == pytest.approx(0.8, abs=1e-9)
        # statsmodels' own root finder stops earlier than ours
        assert mde == pytest.approx(sm.solve_power(nobs1=n1, alpha=0.05, power=0.8, ratio=ratio), rel=1e-4)


def test_mde_difference_maps_back_to_the_effect_size() -> None:
    mde = mde_difference(0.8, 300, 300)
    assert proportion_effectsize(0.8 + mde, 0.8) == pytest.approx(mde_h(300, 300), rel=1e-9)
    assert 0.07 < mde < 0.09
    down = mde_difference(0.8, 300, 300, direction=-1)
    assert down < 0 and abs(down) > mde  # on the arcsine scale a drop from 0.8 must be larger in size
    assert mde_difference(0.995, 50, 50) is None  # cannot rise far enough above 0.995
    assert mde_difference(0.8, 0, 300) is None


def test_positives_needed_match_statsmodels_and_simulation() -> None:
    h = proportion_effectsize(0.85, 0.80)
    n = n_per_arm_for(0.80, 0.05)
    assert n == pytest.approx(NormalIndPower().solve_power(effect_size=h, alpha=0.05, power=0.8), rel=1e-6)
    # simulated power of the pooled z test at that size is ~0.8
    rng = np.random.default_rng(42)
    m = int(np.ceil(n))
    k1, k2 = rng.binomial(m, 0.85, 4_000), rng.binomial(m, 0.80, 4_000)
    pooled = (k1 + k2) / (2 * m)
    z = (k1 - k2) / m / np.sqrt(pooled * (1 - pooled) * 2 / m)
    assert np.mean(np.abs(z) > norm.ppf(0.975)) == pytest.approx(0.8, abs=0.025)
    assert n_per_arm_for(0.8, 0.0) is None and n_per_arm_for(0.8, 0.3) is None


def test_recall_power_readout() -> None:
    r = recall_power(240, 300, 310, target_diff=0.05, positives_per_arm_per_day=12.5)
    assert r.p_control == pytest.approx(0.8)
    assert r.mde == pytest.approx(mde_difference(0.8, 300, 310))
    assert r.needed_per_arm == 903  # ceil(902.34)
    assert r.more_per_arm == 603 and r.days == 49  # ceil(603 / 12.5)
    done = recall_power(800, 1000, 1000, target_diff=0.05)
    assert done.more_per_arm == 0 and done.days is None
    empty = recall_power(0, 0, 0, target_diff=0.05)
    assert empty.mde is None and empty.needed_per_arm is None
    json.dumps(r.to_json(), allow_nan=False)


@pytest.mark.parametrize(("k_c", "n_c", "n_t"), [(240, 300, 310), (1400, 2000, 2000), (70, 100, 150)])
def test_minimum_detectable_difference_against_statsmodels_and_simulation(k_c: int, n_c: int, n_t: int) -> None:
    """Issue 15 §6: the readout's minimum detectable recall difference is statsmodels' (solve_power on Cohen's h,
    mapped back to recall), and a simulated two-proportion z test at that difference has ~80 % power."""
    p_c = k_c / n_c
    mde = recall_power(k_c, n_c, n_t).mde
    h = NormalIndPower().solve_power(nobs1=n_c, alpha=0.05, power=0.8, ratio=n_t / n_c)
    p_t = np.sin(np.arcsin(np.sqrt(p_c)) + h / 2) ** 2
    assert mde == pytest.approx(p_t - p_c, rel=1e-3)
    rng = np.random.default_rng(n_c + n_t)
    k1, k2 = rng.binomial(n_t, p_c + mde, 20_000), rng.binomial(n_c, p_c, 20_000)
    pooled = (k1 + k2) / (n_t + n_c)
    z = (k1 / n_t - k2 / n_c) / np.sqrt(pooled * (1 - pooled) * (1 / n_t + 1 / n_c))
    assert np.mean(np.abs(z) > norm.ppf(0.975)) == pytest.approx(0.8, abs=0.03)


@pytest.mark.parametrize(("n_c", "n_t", "r_c", "r_t"), [(900, 100, 90.0, 10.0), (300, 310, 12.5, 12.9),
                                                       (100, 400, 5.0, 20.0)])
def test_days_to_target_follow_each_arms_accrual_against_statsmodels(n_c: int, n_t: int, r_c: float,
                                                                     r_t: float) -> None:
    """A 90/10 split (900 and 100 labelled positives, 90 and 10 a day, control recall 0.59, target +0.05) read
    ~1,386 more per arm and 139 days; statsmodels' NormalIndPower at the arms' own ratio says 73 days."""
    p_c, target = 0.59, 0.05
    h = proportion_effectsize(p_c + target, p_c)
    # reference: at day d the arms hold n_c + r_c·d and n_t + r_t·d; statsmodels' power there, by bisection
    def sm_power(d: float) -> float:
        return float(NormalIndPower().power(effect_size=h, nobs1=n_c + r_c * d, alpha=0.05,
                                            ratio=(n_t + r_t * d) / (n_c + r_c * d)))
    lo, hi = 0.0, 1e6
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if sm_power(mid) < 0.8 else (lo, mid)
    r = recall_power(round(p_c * n_c), n_c, n_t, target_diff=target, positives_per_arm_per_day=min(r_c, r_t),
                     arm_rates=(r_c, r_t))
    assert r.days == math.ceil(hi)
    assert r.more_control == math.ceil(r_c * hi - 1e-6) or r.more_control == math.ceil(r_c * hi)
    assert r.more_treatment is not None and abs(r.more_treatment - r_t * hi) <= 1
