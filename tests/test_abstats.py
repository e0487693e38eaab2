"""Two-proportion A/B statistics against statsmodels and scipy on seeded random data."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import chi2_contingency, chisquare, mannwhitneyu
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint, proportions_ztest

from driftline.analysis.label_balance import binned_mannwhitney_p, histogram_median, label_balance
from driftline.analysis.abstats import (
    ArmCounts,
    arm_metrics,
    compare_arms,
    compare_proportions,
    holm,
    newcombe_interval,
    relative_lift,
    srm_check,
    two_proportion_p_value,
)
from driftline.core.grids import DELAY_EDGES, N_DELAY_BINS


def _random_pairs(seed: int, n: int = 300) -> list[tuple[int, int, int, int]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        n1, n2 = (int(x) for x in rng.integers(1, 3000, 2))
        p1, p2 = rng.uniform(0, 1, 2) ** rng.choice([1, 4])  # many small rates, like FPR / fraud
        out.append((int(rng.binomial(n1, p1)), n1, int(rng.binomial(n2, p2)), n2))
    out += [(0, 10, 0, 12), (10, 10, 0, 7), (0, 5, 5, 5), (3, 3, 3, 3), (1, 1, 0, 1)]
    return out


def test_newcombe_matches_statsmodels() -> None:
    for k1, n1, k2, n2 in _random_pairs(1):
        for alpha in (0.05, 0.1):
            ours = newcombe_interval(k1, n1, k2, n2, alpha)
            ref = confint_proportions_2indep(k1, n1, k2, n2, method="newcomb", compare="diff", alpha=alpha)
            assert ours == pytest.approx(ref, abs=1e-9)


def test_wilson_rates_match_statsmodels() -> None:
    rng = np.random.default_rng(2)
    for _ in range(100):
        tp, fp, fn, tn, uf, uu = (int(x) for x in rng.integers(0, 500, 6))
        m = arm_metrics(ArmCounts(tp, fp, fn, tn, uf, uu))
        for r, (k, n) in [(m.recall, (tp, tp + fn)), (m.fpr, (fp, fp + tn)), (m.precision, (tp, tp + fp)),
                          (m.alert_rate, (tp + fp + uf, tp + fp + fn + tn + uf + uu)),
                          (m.label_coverage, (tp + fp + fn + tn, tp + fp + fn + tn + uf + uu))]:
            lo, hi = proportion_confint(k, n, alpha=0.05, method="wilson")
            assert (r.low, r.high, r.value, r.n) == pytest.approx((lo, hi, k / n, n), abs=1e-9)


def test_zero_denominator_is_null_not_zero() -> None:
    m = arm_metrics(ArmCounts(0, 0, 0, 0, 5, 5))
    assert m.recall.value is None and m.precision.value is None and m.fpr.value is None
    assert m.alert_rate.value == pytest.approx(0.5)
    c = compare_proportions(0, 0, 3, 10, metric="recall")
    assert (c.diff, c.low, c.high, c.p_value, c.rel_lift.value) == (None, None, None, None, None)


def test_p_value_is_pooled_score_test() -> None:
    for k1, n1, k2, n2 in _random_pairs(3, 100):
        ours = two_proportion_p_value(k1, n1, k2, n2)
        pooled = (k1 + k2) / (n1 + n2)
        if 0 < pooled < 1:
            _, ref = proportions_ztest([k1, k2], [n1, n2])
            assert ours == pytest.approx(ref, rel=1e-9, abs=1e-300)
            if min(k1 + k2, n1 + n2 - k1 - k2) > 0:
                chi = chi2_contingency([[k1, n1 - k1], [k2, n2 - k2]], correction=False)
                assert ours == pytest.approx(chi.pvalue, rel=1e-7, abs=1e-300)
        else:
            assert ours == 1.0


def test_relative_lift_agrees_with_statsmodels_score_ratio_for_large_arms() -> None:
    """Where every cell holds 50 or more, MOVER-R's ratio interval and statsmodels' score interval of the ratio are
    the same to well under 1 %: the method changes only where the two arms are small."""
    checked = 0
    for k1, n1, k2, n2 in _random_pairs(4, 400):
        if min(k1, n1 - k1, k2, n2 - k2) < 50:
            continue
        lift = relative_lift(k1, n1, k2, n2)
        lo, hi = confint_proportions_2indep(k1, n1, k2, n2, compare="ratio", method="score")
        assert (lift.low + 1, lift.high + 1) == pytest.approx((lo, hi), rel=5e-3)
        assert lift.value == pytest.approx((k1 / n1) / (k2 / n2) - 1)
        checked += 1
    assert checked > 30


def test_relative_lift_limits_are_the_ratios_at_which_movers_difference_interval_ends_at_zero() -> None:
    """MOVER-R by its definition, with statsmodels' Wilson intervals: at the lower limit R, the MOVER lower end of
    p_t − R·p_c is 0, at the upper limit its upper end is 0 (small arms included)."""
    for k1, n1, k2, n2 in _random_pairs(7, 300):
        if k2 == 0:
            continue
        lift = relative_lift(k1, n1, k2, n2)
        p1, p2 = k1 / n1, k2 / n2
        l1, u1 = proportion_confint(k1, n1, method="wilson")
        l2, u2 = proportion_confint(k2, n2, method="wilson")
        lo, hi = lift.low + 1, lift.high + 1
        if k1 > 0:
            assert p1 - lo * p2 - np.hypot(p1 - l1, lo * (u2 - p2)) == pytest.approx(0, abs=1e-9), (k1, n1, k2, n2)
        else:
            assert lo == 0.0
        assert p1 - hi * p2 + np.hypot(u1 - p1, hi * (p2 - l2)) == pytest.approx(0, abs=1e-9), (k1, n1, k2, n2)


def test_relative_lift_of_a_one_event_arm_holds_no_lift_when_the_difference_does() -> None:
    """Verification tryout: 1 of 1 flagged against 100 of 200 read +100 % [+73.8 %, +129.0 %] (the log-adjusted
    ratio's variance term of an arm with k = n is 0) while the Newcombe difference [−0.296, +0.569] holds 0."""
    lift, (lo, hi) = relative_lift(1, 1, 100, 200), newcombe_interval(1, 1, 100, 200)
    assert lo < 0 < hi and lift.low < 0 < lift.high
    assert (lift.low, lift.high) == pytest.approx((-0.5879, 1.3182), abs=1e-4)


def test_relative_lift_covers_the_true_ratio_for_a_tiny_arm_near_one() -> None:
    """Coverage by simulation (seeded): 3 predictions at p = 0.9 against 200 at 0.5; the log-adjusted interval
    covered the true ratio 1.8 in 81 % of draws, MOVER-R in 93 %."""
    rng = np.random.default_rng(1)
    hits = total = 0
    for _ in range(2000):
        k1, k2 = int(rng.binomial(3, 0.9)), int(rng.binomial(200, 0.5))
        lift = relative_lift(k1, 3, k2, 200)
        hits += lift.low + 1 <= 1.8 <= lift.high + 1
        total += 1
    assert hits / total >= 0.925


def test_relative_lift_interval_holds_its_point_estimate() -> None:
    # 0 of 53 flagged were frauds in B against 59 of 59 in A: lift −100 % was printed [−99.9 %, −85.3 %]
    for k1, n1, k2, n2 in [*_random_pairs(5, 400), (0, 53, 59, 59), (0, 1, 1, 1), (0, 100, 3, 1000)]:
        lift = relative_lift(k1, n1, k2, n2)
        if k2 == 0:
            continue
        assert lift.low <= lift.value <= lift.high, (k1, n1, k2, n2, lift)
    assert relative_lift(0, 53, 59, 59).low == -1.0


def test_holm_matches_statsmodels() -> None:
    rng = np.random.default_rng(5)
    for _ in range(50):
        p = rng.uniform(0, 0.2, int(rng.integers(1, 7))) ** 2
        assert holm(list(p)) == pytest.approx(multipletests(p, method="holm")[1], abs=1e-12)
    p = [0.01, None, 0.04, 0.03]
    ref = multipletests([0.01, 0.04, 0.03], method="holm")[1]
    assert holm(p) == pytest.approx((ref[0], None, ref[1], ref[2]))


def test_compare_arms_holm_across_headline_metrics() -> None:
    t, c = ArmCounts(180, 900, 20, 12000, 500, 60000), ArmCounts(160, 800, 40, 12100, 480, 61000)
    cmp = compare_arms(t, c)
    assert list(cmp.metrics) == ["recall", "fpr", "precision", "alert_rate"]
    raw = [m.p_value for m in cmp.metrics.values()]
    assert [m.p_holm for m in cmp.metrics.values()] == pytest.approx(multipletests(raw, method="holm")[1])
    rec = cmp.metrics["recall"]
    assert (rec.k_t, rec.n_t, rec.k_c, rec.n_c) == (180, 200, 160, 200)
    assert rec.diff == pytest.approx(0.1) and rec.significant
    doc = json.loads(json.dumps(cmp.to_json(), allow_nan=False))
    assert doc["metrics"]["recall"]["counts"]["treatment"] == {"k": 180, "n": 200}


def test_srm_matches_scipy_chisquare_and_needs_materiality() -> None:
    rng = np.random.default_rng(6)
    for _ in range(30):
        obs = {"A": int(rng.integers(100, 10_000)), "B": int(rng.integers(100, 10_000)),
               "C": int(rng.integers(100, 10_000))}
        split = {"A": 0.5, "B": 0.25, "C": 0.25}
        r = srm_check(obs, split)
        ref = chisquare(list(obs.values()), f_exp=np.array([0.5, 0.25, 0.25]) * sum(obs.values()))
        assert (r.chi2, r.p_value) == pytest.approx((ref.statistic, ref.pvalue), rel=1e-9, abs=1e-300)
    # 10 M predictions, 50.1 % vs 49.9 %: highly significant but only 0.2 % relative -> no mismatch
    big = srm_check({"A": 5_010_000, "B": 4_990_000}, {"A": 1, "B": 1})
    assert big.p_value < 1e-9 and not big.mismatch
    # 52 % vs 48 % on 20,000: significant and 4 % relative -> mismatch
    assert srm_check({"A": 10_400, "B": 9_600}, {"A": 1, "B": 1}).mismatch
    # 55 % vs 45 % on 200: large but not significant at 0.001 -> no mismatch
    small = srm_check({"A": 110, "B": 90}, {"A": 1, "B": 1})
    assert small.p_value > 0.001 and not small.mismatch
    assert srm_check({}, {"A": 1, "B": 1}).p_value is None


def test_binned_mannwhitney_matches_scipy_on_expanded_samples() -> None:
    rng = np.random.default_rng(7)
    for shift in (0.0, 0.3):
        d1 = rng.lognormal(11.0, 1.5, 700)
        d2 = rng.lognormal(11.0 + shift, 1.5, 500)
        h1 = np.bincount(np.searchsorted(DELAY_EDGES, d1, side="right") - 1, minlength=N_DELAY_BINS)
        h2 = np.bincount(np.searchsorted(DELAY_EDGES, d2, side="right") - 1, minlength=N_DELAY_BINS)
        x1, x2 = np.repeat(np.arange(N_DELAY_BINS), h1), np.repeat(np.arange(N_DELAY_BINS), h2)
        ref = mannwhitneyu(x1, x2, method="asymptotic", use_continuity=True).pvalue
        assert binned_mannwhitney_p(h1, h2) == pytest.approx(ref, rel=1e-9)


def test_histogram_median() -> None:
    edges = np.array([0.0, 10.0, 20.0, 30.0])
    assert histogram_median(np.array([1, 2, 1, 0]), edges) == pytest.approx(15.0)
    assert histogram_median(np.array([0, 0, 0, 5]), edges) == pytest.approx(30.0)  # open last bin
    assert histogram_median(np.zeros(4), edges) is None


def test_label_balance_warns_when_flagging_more_earns_more_labels() -> None:
    # Flagged predictions are reviewed (95 % labelled); unflagged only labelled by chargebacks (20 %).
    # B flags 8 % of 50,000, A 5 % -> B gets more labels.
    def arm(flag_rate: float) -> ArmCounts:
        n = 50_000
        f = int(n * flag_rate)
        lf, lu = int(0.95 * f), int(0.20 * (n - f))
        tp, fn = int(0.3 * lf), int(0.01 * lu)
        return ArmCounts(tp, lf - tp, fn, lu - fn, f - lf, n - f - lu)

    lb = label_balance(arm(0.08), arm(0.05))
    assert any("B flags more than A" in w and "recall comparison is biased" in w for w in lb.warnings)
    assert lb.coverage["B"].value > lb.coverage["A"].value
    assert lb.coverage_flagged["A"].value == pytest.approx(0.95, abs=0.001)
    json.dumps(lb.to_json(), allow_nan=False)
    # same flag rate in both arms: no warning
    assert label_balance(arm(0.05), arm(0.05)).warnings == ()


def test_label_balance_coverage_and_delay_warnings() -> None:
    t, c = ArmCounts(100, 300, 20, 5000, 0, 4000), ArmCounts(100, 300, 20, 3000, 0, 6000)
    rng = np.random.default_rng(8)
    day = 86400.0
    ht = np.bincount(np.searchsorted(DELAY_EDGES, rng.exponential(3 * day, 5000), "right") - 1,
                     minlength=N_DELAY_BINS)
    hc = np.bincount(np.searchsorted(DELAY_EDGES, rng.exponential(1 * day, 5000), "right") - 1,
                     minlength=N_DELAY_BINS)
    lb = label_balance(t, c, delay_t=ht, delay_c=hc, delay_edges=DELAY_EDGES)
    assert any(w.startswith("label coverage differs") for w in lb.warnings)
    assert any(w.startswith("labels arrive later for B") for w in lb.warnings)
    assert lb.median_delay_s["B"] == pytest.approx(3 * day * np.log(2), rel=0.1)
    assert lb.delay_p_value < 1e-6
