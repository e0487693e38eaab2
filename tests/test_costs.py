"""Costs: seed 000's monthly KPI table, cost per 1,000 predictions, its delta-method se and its interval."""

from __future__ import annotations

import json

import numpy as np
import pytest

from driftline.analysis.abstats import ArmCounts
from driftline.analysis.costs import Costs, business_kpis, cost_difference, cost_per_1000

SEED000 = Costs(fn_cost=400.0, review_cost=5.0, complaint_rate=0.05, complaint_cost=0.0,
                model_cost_per_prediction=0.002)


def test_seed000_kpi_table_at_threshold_0_5() -> None:
    """Seed 000: 100,000 tx/month, 2 % fraud, recall 0.8, FPR 6/90 -> €200,867, 1,356 h, 327 complaints."""
    k = business_kpis(100_000, 0.02, 0.8, 6 / 90, SEED000, minutes_per_review=10)
    assert round(k.total) == 200_867
    assert round(k.review_hours) == 1_356
    assert round(k.complaints) == 327
    assert round(k.missed_cost) == 160_000
    assert round(k.review_cost) == 40_667
    assert k.model_cost == pytest.approx(200.0)
    assert round(k.flagged) == 8_133 and round(k.false_positives) == 6_533
    assert round(k.precision, 3) == 0.197
    json.dumps(k.to_json(), allow_nan=False)


@pytest.mark.parametrize(
    ("recall", "fp_per_90", "false_alarms", "complaints", "hours", "missed_cost", "total"),
    [
        (0.4, 1, 1_089, 54, 315, 480_000, 489_644),
        (0.6, 3, 3_267, 163, 744, 320_000, 342_533),
        (0.8, 6, 6_533, 327, 1_356, 160_000, 200_867),
        (0.9, 15, 16_333, 817, 3_022, 80_000, 170_867),
        (1.0, 40, 43_556, 2_178, 7_593, 0, 227_978),
    ],
)
def test_seed000_threshold_tradeoff_table(recall: float, fp_per_90: int, false_alarms: int, complaints: int,
                                          hours: int, missed_cost: int, total: int) -> None:
    """Seed 000's "choosing the threshold" table: thresholds 0.9 ... 0.1 reproduce every column."""
    k = business_kpis(100_000, 0.02, recall, fp_per_90 / 90, SEED000)
    assert (round(k.false_positives), round(k.complaints), round(k.review_hours), round(k.missed_cost),
            round(k.total)) == (false_alarms, complaints, hours, missed_cost, total)


def test_seed000_rules_engine_baseline() -> None:
    """Seed 000's rules engine: 10,000 flags, 1,200 caught -> €370,000, 1,667 h, 440 complaints."""
    rules = Costs(400.0, 5.0, 0.05, 0.0, 0.0)
    k = business_kpis(100_000, 0.02, 0.6, 8_800 / 98_000, rules)
    assert (round(k.total), round(k.review_hours), round(k.complaints)) == (370_000, 1_667, 440)


def test_cost_per_1000_from_counts_matches_seed000() -> None:
    """900,000 fully labelled predictions at seed 000's rates cost €200,866.67/100,000 per prediction."""
    c = ArmCounts(tp=14_400, fp=58_800, fn=3_600, tn=882_000 - 58_800)
    est = cost_per_1000(c, SEED000)
    assert est.value == pytest.approx(2_008.6667, abs=1e-3)
    assert est.low < est.value < est.high
    # same rates when only some predictions are labelled, at a different rate per flag state
    part = ArmCounts(tp=14_400 // 2, fp=58_800 // 2, fn=3_600 // 10, tn=(882_000 - 58_800) // 10,
                     unl_flagged=(14_400 + 58_800) // 2, unl_unflagged=(3_600 + 823_200) * 9 // 10)
    assert cost_per_1000(part, SEED000).value == pytest.approx(2_008.6667, abs=1e-3)


def test_complaint_cost_enters_per_false_positive() -> None:
    c = ArmCounts(tp=10, fp=90, fn=0, tn=900)
    base = cost_per_1000(c, Costs(review_cost=1.0)).value
    with_complaints = cost_per_1000(c, Costs(review_cost=1.0, complaint_rate=0.1, complaint_cost=20.0)).value
    assert base == pytest.approx(100.0)  # 100 flags per 1,000 at €1
    assert with_complaints - base == pytest.approx(90 * 0.1 * 20.0)


@pytest.mark.slow
def test_delta_method_se_matches_simulation() -> None:
    """The delta-method SE agrees with the spread of the estimate over 2,000 simulated windows."""
    rng = np.random.default_rng(11)
    costs = Costs(400.0, 5.0, 0.05, 30.0, 0.002)
    n, prev, rec, fpr, lab_f, lab_u = 20_000, 0.02, 0.8, 0.067, 0.9, 0.3
    truth = 1000 * (0.002 + 5 * (prev * rec + (1 - prev) * fpr) + 400 * prev * (1 - rec)
                    + 1.5 * (1 - prev) * fpr)
    vals, ses, covered = [], [], 0
    for _ in range(2_000):
        pos = rng.binomial(n, prev)
        tp, fp = rng.binomial(pos, rec), rng.binomial(n - pos, fpr)
        fn, tn = pos - tp, n - pos - fp
        ltp, lfp, lfn, ltn = rng.binomial(tp, lab_f), rng.binomial(fp, lab_f), rng.binomial(fn, lab_u), \
            rng.binomial(tn, lab_u)
        est = cost_per_1000(ArmCounts(ltp, lfp, lfn, ltn, tp + fp - ltp - lfp, fn + tn - lfn - ltn), costs)
        vals.append(est.value)
        ses.append(est.se)
        covered += est.low <= truth <= est.high
    assert np.mean(vals) == pytest.approx(truth, rel=0.01)
    assert np.mean(ses) == pytest.approx(np.std(vals), rel=0.08)
    assert 0.93 <= covered / 2_000 <= 0.97


def test_cost_difference_and_nulls() -> None:
    t, c = ArmCounts(160, 700, 40, 9100), ArmCounts(140, 600, 60, 9200)
    d = cost_difference(t, c, SEED000)
    et, ec = cost_per_1000(t, SEED000), cost_per_1000(c, SEED000)
    assert d.diff == pytest.approx(et.value - ec.value)
    # 10,000 predictions an arm: the MOVER interval is within 0.2 % of the normal half-width (was equal to it)
    assert (d.high - d.low) / 2 == pytest.approx(1.959964 * np.hypot(et.se, ec.se), rel=2e-3)
    assert d.se == pytest.approx(np.hypot(et.se, ec.se))
    # no labelled unflagged prediction: the missed-positive cost cannot be estimated
    assert cost_per_1000(ArmCounts(5, 5, 0, 0, 0, 100), SEED000).value is None
    assert cost_difference(ArmCounts(0, 0, 0, 0), c, SEED000).diff is None
    # ... but is not needed when nothing is priced per miss
    assert cost_per_1000(ArmCounts(5, 5, 0, 0, 0, 90), Costs(review_cost=2.0)).value == pytest.approx(200.0)
    json.dumps(d.to_json(), allow_nan=False)


def test_cost_interval_stays_within_the_costs_a_prediction_can_have() -> None:
    """B of a split: 100 genuine predictions, 53 flagged, 0 missed of 47 unflagged: €2,652 per 1,000 was
    printed [−€4,963, €10,267]. Reference: the cost's range over every alert rate, miss share and precision."""
    rng = np.random.default_rng(5)
    costs_list = [SEED000, Costs(400.0, 5.0, 0.05, 30.0, 0.002), Costs(1.0, 50.0, 0.5, 10.0, 0.0)]
    grid = np.linspace(0.0, 1.0, 21)
    a, q, pi = np.meshgrid(grid, grid, grid)
    cases = [(SEED000, ArmCounts(0, 53, 0, 47))]
    for _ in range(300):
        n = int(rng.integers(1, 60))
        cells = rng.multinomial(n, rng.dirichlet(np.ones(6) * 0.3))
        cases.append((costs_list[int(rng.integers(0, 3))], ArmCounts(*(int(x) for x in cells))))
    for costs, arm in cases:
        est = cost_per_1000(arm, costs)
        if est.value is None:
            continue
        every = 1000.0 * (costs.model_cost_per_prediction + costs.review_cost * a
                          + costs.fn_cost * (1 - a) * q + costs.fp_cost * a * (1 - pi))
        assert every.min() - 1e-9 <= est.low <= est.value <= est.high <= every.max() + 1e-9, (arm, costs, est)
    b = cost_per_1000(ArmCounts(0, 53, 0, 47), SEED000)
    assert b.value == pytest.approx(2_652.0)
    assert 2.0 < b.low < b.value < b.high  # no longer cut to the model cost: tests/test_cost_interval.py


def test_cost_difference_interval_stays_within_the_possible_differences() -> None:
    """Tiny arms' delta-method difference reached 2.4 × past ±(most − least) cost per 1,000 predictions; the
    uncut se is kept for the always-valid interval."""
    rng = np.random.default_rng(1)
    costs = SEED000
    span = 1000.0 * (max(costs.fn_cost, costs.review_cost + costs.fp_cost))
    for _ in range(2000):
        arms = [ArmCounts(*(int(x) for x in rng.multinomial(int(rng.integers(1, 20)), rng.dirichlet(np.ones(6) * .3))))
                for _ in range(2)]
        d = cost_difference(arms[0], arms[1], costs)
        if d.diff is None:
            continue
        assert -span - 1e-9 <= d.low <= d.diff <= d.high <= span + 1e-9
        assert d.se is not None and d.se >= 0
