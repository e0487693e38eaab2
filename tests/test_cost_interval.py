"""The A/B cost interval (analysis/cost_interval.py): coverage at small counts, feasibility without clipping,
the mid-p bounds against a direct root, and agreement with the normal interval for large arms."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from scipy.optimize import brentq

from driftline.analysis.abstats import ArmCounts
from driftline.analysis.cost_interval import mid_p_bounds
from driftline.analysis.costs import Costs, cost_difference, cost_per_1000, cost_range

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from cost_interval_coverage import EXAMPLE, REVIEWS, coverage  # noqa: E402

Z = 1.959963984540054


def _mid_p(k: int, n: int, tail: float) -> tuple[float, float]:
    """Mid-p bounds by a direct root of P(X > k) + ½P(X = k) (scipy's binomial)."""
    def f(p: float, t: float) -> float:
        return float(stats.binom.sf(k, n, p) + 0.5 * stats.binom.pmf(k, n, p) - t)
    low = 0.0 if k == 0 else brentq(f, 1e-15, 1 - 1e-15, args=(tail,), xtol=1e-15)
    high = 1.0 if k == n else brentq(f, 1e-15, 1 - 1e-15, args=(1 - tail,), xtol=1e-15)
    return low, high


@pytest.mark.parametrize(("k", "n"), [(0, 10), (1, 10), (3, 47), (10, 10), (1, 1), (40, 9_140), (700, 10_000)])
def test_mid_p_bounds_match_a_direct_root(k: int, n: int) -> None:
    z = np.array([0.3, 1.0, Z])
    low, high = mid_p_bounds(k, n, z)
    for zi, lo, hi in zip(z, low, high):
        want = _mid_p(k, n, float(stats.norm.sf(zi)))
        assert (lo, hi) == pytest.approx(want, abs=1e-11)
    assert [x.tolist() for x in mid_p_bounds(5, 0, z)] == [[0.0] * 3, [1.0] * 3]


@pytest.mark.slow
@pytest.mark.parametrize(("costs", "n", "labels"), [
    (EXAMPLE, 350, (1.0, 1.0)),   # fraud example, ~2 expected misses: the clipped normal interval covered 0.897
    (REVIEWS, 30, (1.0, 1.0)),    # reviews dominate, ~2 flags: 0.885
])
def test_small_arms_keep_their_coverage(costs: Costs, n: int, labels: tuple[float, float]) -> None:
    """Seeded (deterministic) simulation of 2,000 pairs of arms: the arm's and the difference's 95 % intervals
    hold the truth at least 93 % of the time (binomial sd of a true 95 % over 2,000 reps: 0.5 %)."""
    arm, diff, outside, valid = coverage(n, costs, labels, reps=2_000, seed=0)
    assert valid == 2_000 and outside == 0.0
    assert arm >= 0.93, arm
    assert diff >= 0.93, diff


def _random_arms(seed: int, count: int, most: int) -> list[ArmCounts]:
    rng = np.random.default_rng(seed)
    return [ArmCounts(*(int(x) for x in rng.multinomial(int(rng.integers(1, most)), rng.dirichlet(np.ones(6) * .3))))
            for _ in range(count)]


COSTS_LIST = [EXAMPLE, REVIEWS, Costs(400.0, 5.0, 0.05, 30.0, 0.002), Costs(1.0, 50.0, 0.5, 10.0, 0.0)]


def test_interval_holds_its_estimate_and_stays_feasible_without_clipping() -> None:
    """Tiny arms: estimate inside the interval, the interval inside [least, most] cost, and never sitting on a
    bound it could only reach by clipping (a bound is reached only when the data put the estimate there)."""
    for i, arm in enumerate(_random_arms(7, 400, 40)):
        costs = COSTS_LIST[i % len(COSTS_LIST)]
        least, most = (1000.0 * x for x in cost_range(costs))
        est = cost_per_1000(arm, costs)
        if est.value is None:
            continue
        assert least - 1e-9 <= est.low <= est.value + 1e-9 and est.value - 1e-9 <= est.high <= most + 1e-9, (arm, est)
        assert est.high > est.low
    # seed 000's arm B (100 predictions, 53 flagged, 0 of 47 unflagged missed): printed [−€4,963, €10,267], then
    # clipped to [€2, …]; now the lower end is the review cost at the alert rate's mid-p lower bound (no miss)
    b = cost_per_1000(ArmCounts(0, 53, 0, 47), EXAMPLE)
    assert b.value == pytest.approx(2_652.0)
    assert b.low == pytest.approx(1000.0 * (0.002 + 5.0 * _mid_p(53, 100, 0.025)[0]), rel=1e-9)
    assert b.low > 2.0


def test_difference_is_mover_of_the_arms_and_stays_within_the_possible_differences() -> None:
    for i, (t, c) in enumerate(zip(_random_arms(1, 300, 20), _random_arms(2, 300, 20))):
        costs = COSTS_LIST[i % len(COSTS_LIST)]
        span = 1000.0 * (cost_range(costs)[1] - cost_range(costs)[0])
        d, et, ec = cost_difference(t, c, costs), cost_per_1000(t, costs), cost_per_1000(c, costs)
        if d.diff is None:
            continue
        assert d.low == pytest.approx(d.diff - math.hypot(et.value - et.low, ec.high - ec.value))
        assert d.high == pytest.approx(d.diff + math.hypot(et.high - et.value, ec.value - ec.low))
        assert -span - 1e-9 <= d.low <= d.diff <= d.high <= span + 1e-9


def _normal(arm: ArmCounts, costs: Costs) -> tuple[float, float]:
    """Fully labelled arm: the cost is a linear combination of the four multinomial cell shares; its normal
    interval from the multinomial covariance (numpy), per 1,000 predictions."""
    cells = np.array([arm.tp, arm.fp, arm.fn, arm.tn], dtype=float)
    n = cells.sum()
    p = cells / n
    m, r = costs.model_cost_per_prediction, costs.review_cost
    w = np.array([m + r, m + r + costs.fp_cost, m + costs.fn_cost, m])
    cov = (np.diag(p) - np.outer(p, p)) / n
    return 1000.0 * float(w @ p), 1000.0 * math.sqrt(float(w @ cov @ w))


@pytest.mark.parametrize("costs", COSTS_LIST)
def test_large_arms_agree_with_the_normal_interval(costs: Costs) -> None:
    """2,000,000 predictions an arm: within 3 % of a standard error of the normal bounds (the mid-p interval is
    skewed like the rare cells it prices: at 200,000 predictions its lower end sits 0.05 se above the normal one)."""
    t, c = ArmCounts(32_000, 98_000, 8_000, 1_862_000), ArmCounts(28_000, 90_000, 12_000, 1_870_000)
    for arm in (t, c):
        value, se = _normal(arm, costs)
        est = cost_per_1000(arm, costs)
        assert est.value == pytest.approx(value)
        assert est.low == pytest.approx(value - Z * se, abs=0.03 * se)
        assert est.high == pytest.approx(value + Z * se, abs=0.03 * se)
    (vt, st), (vc, sc) = _normal(t, costs), _normal(c, costs)
    d, se = cost_difference(t, c, costs), math.hypot(st, sc)
    assert d.low == pytest.approx(vt - vc - Z * se, abs=0.03 * se)
    assert d.high == pytest.approx(vt - vc + Z * se, abs=0.03 * se)
