"""Drift statistics against scipy/statsmodels on the same binned data, noise floors by simulation,
no false alarm on seeded no-drift streams, detection of real shifts (the 100 ms latency budget is measured in
benchmarks/drift_bench.py: no wall-clock assertion here)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from scipy.spatial.distance import jensenshannon
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import confint_proportions_2indep, proportions_ztest

from driftline.core.grids import N_FEATURE_BINS, N_SCORE_BINS, feature_bin, feature_bin_lower, feature_bin_mid, score_bin
from driftline.core.stats import NEG, POS, FeatureHist
from driftline.analysis import drift_stats as ds
from driftline.analysis.drift import categorical_drift, drift_report, numeric_drift, prevalence_drift
from driftline.analysis.drift_results import DriftThresholds
from driftline.analysis.fine_grid import FineSample
from driftline.analysis.profiles import build_profile, numeric_profile

from drift_sim import CHANNELS, COUNTRIES, cat_hist, country_weights, num_hist  # noqa: E402 - shared with the bench


# --- helpers ---------------------------------------------------------------------------------------
def fine(values: np.ndarray) -> FineSample:
    idx, cnt = np.unique(feature_bin(values), return_counts=True)
    return FineSample(idx.astype(np.int64), cnt.astype(np.int64))


def draw_window(rng: np.random.Generator, n: int, amount_scale: float = 1.0, country_shift: float = 0.0,
                amount_missing: float = 0.02) -> tuple[dict[str, FeatureHist], np.ndarray, np.ndarray]:
    """8 mixed-type features from fixed distributions, a score histogram and conf counts."""
    amt = rng.lognormal(3.5, 1.2, n) * amount_scale
    amt_missing = rng.random(n) < amount_missing
    cp_missing = rng.random(n) < 0.05
    cp = (rng.random(n) < 0.7).astype(np.int64)
    feats = {
        "amount": num_hist(amt[~amt_missing], amt_missing.sum()),
        "age_days": num_hist(rng.gamma(2.0, 300.0, n)),
        "hour": num_hist(rng.integers(0, 24, n).astype(float)),
        "balance": num_hist(rng.normal(1000.0, 2500.0, n)),
        "n_tx_24h": num_hist(rng.poisson(3.0, n).astype(float)),
        "country": cat_hist(COUNTRIES, rng.choice(len(COUNTRIES), n, p=country_weights(country_shift))),
        "card_present": cat_hist(np.array(["false", "true"]), cp[~cp_missing], cp_missing.sum()),
        "channel": cat_hist(CHANNELS, rng.choice(4, n, p=[0.4, 0.3, 0.25, 0.05])),
    }
    score = 1.0 / (1.0 + np.exp(-rng.normal(-3.0, 1.5, n)))
    y = rng.random(n) < score
    conf = np.zeros((3, 2), np.int64)
    conf[POS, 0], conf[NEG, 0] = y.sum(), n - y.sum()
    return feats, np.bincount(score_bin(score), minlength=N_SCORE_BINS), conf


# --- each statistic against scipy on the same binned data -----------------------------------------
def test_psi_against_direct_computation_with_empty_bin_floor() -> None:
    ref = np.array([120, 0, 35, 300, 45, 0, 500])
    cur = np.array([100, 7, 0, 280, 90, 0, 520])
    direct = 0.0
    for r, c in zip(ref / ref.sum(), cur / cur.sum()):
        p, q = max(r, 1e-4), max(c, 1e-4)
        direct += (q - p) * math.log(q / p)
    assert ds.psi(ref, cur) == pytest.approx(direct, rel=1e-12)
    rows = ds.psi(np.vstack([ref, cur]), np.vstack([cur, ref]))
    assert rows == pytest.approx([direct, direct], rel=1e-12)  # vectorised rows; PSI is symmetric
    assert ds.psi(ref, ref) == 0.0


def test_js_distance_equals_scipy_base2() -> None:
    rng = np.random.default_rng(10)
    for _ in range(5):
        ref, cur = rng.integers(0, 50, 12), rng.integers(0, 50, 12)
        cur[3] = 0
        assert ds.js_distance(ref, cur) == pytest.approx(jensenshannon(ref, cur, base=2), abs=1e-12)


def test_chi2_equals_chi2_contingency_and_chisquare_on_the_same_table() -> None:
    ref = np.array([50, 30, 0, 10, 10, 8])
    cur = np.array([20, 0, 0, 5, 10, 4])
    got = ds.chi2_test(ref, cur)
    table = np.vstack([ref, cur])[:, [0, 1, 3, 4, 5]]  # the all-zero column dropped
    want = stats.chi2_contingency(table, correction=False)
    assert (got.stat, got.p_value, got.dof) == pytest.approx((want.statistic, want.pvalue, want.dof), rel=1e-12)
    # the same Pearson statistic as a goodness-of-fit on the flattened table with margin-based expectations
    gof = stats.chisquare(table.ravel(), want.expected_freq.ravel(), ddof=table.size - 1 - want.dof)
    assert (got.stat, got.p_value) == pytest.approx((gof.statistic, gof.pvalue), rel=1e-12)
    assert ds.chi2_test(np.array([5, 0]), np.array([9, 0])).dof == 0  # one populated column: no test


@pytest.mark.parametrize("kind", ["continuous", "ties", "shifted"])
def test_ks_fine_grid_matches_ks_2samp_and_brackets_raw_ks(kind: str) -> None:
    rng = np.random.default_rng({"continuous": 11, "ties": 12, "shifted": 13}[kind])
    for n_r, n_c in [(300, 200), (800, 1500), (5000, 3000)]:
        if kind == "ties":
            a, b = rng.poisson(4.0, n_r).astype(float), rng.poisson(4.3, n_c).astype(float)
        else:
            a = rng.lognormal(3.0, 1.0, n_r)
            b = rng.lognormal(3.0 + (0.1 if kind == "shifted" else 0.0), 1.0, n_c)
        fa, fb = fine(a), fine(b)
        k = ds.ks_fine(fa.idx, fa.counts, fb.idx, fb.counts)
        binned = stats.ks_2samp(np.repeat(feature_bin_mid(fa.idx), fa.counts),
                                np.repeat(feature_bin_mid(fb.idx), fb.counts), method="asymp")
        assert k.stat == pytest.approx(binned.statistic, abs=1e-12)  # exact on the binned data
        raw = stats.ks_2samp(a, b).statistic
        # stated bound: binned KS ≤ raw KS ≤ upper ≤ binned KS + largest single-fine-bin mass
        assert k.stat - 1e-12 <= raw <= k.upper + 1e-12
        assert k.upper <= k.stat + k.max_bin_mass + 1e-12
        p = ds.ks_p_value(k.stat, n_r, n_c)
        if ds.ks_n_effective(n_r, n_c) <= ds.KS_EXACT_MAX_N:
            assert p == pytest.approx(binned.pvalue, rel=1e-9)
        elif binned.pvalue > 1e-3:
            assert p == pytest.approx(binned.pvalue, rel=0.02)  # Stephens' approximation above n_eff 1000


def test_frozen_bin_ks_is_below_fine_ks() -> None:
    rng = np.random.default_rng(14)
    p = numeric_profile("x", fine(rng.normal(50, 10, 4000)), 10)
    cur = fine(rng.normal(52, 12, 3000))
    f = numeric_drift(p, cur)
    assert f.ks is not None and f.ks.stat_frozen is not None and f.ks.stat_upper is not None
    assert f.ks.stat_frozen <= f.ks.stat + 1e-12 <= f.ks.stat_upper + 2e-12
    assert f.ks.stat == pytest.approx(ds.ks_fine(p.fine.idx, p.fine.counts, cur.idx, cur.counts).stat)


def test_ks_p_value_stephens_close_to_kstwo_for_large_n() -> None:
    for en in (1500, 4000):
        for z in (0.8, 1.2, 1.6, 2.0):
            d = z / math.sqrt(en)
            assert ds.ks_p_value(d, 2 * en, 2 * en) == pytest.approx(stats.kstwo.sf(d, en), rel=0.02)
    assert ds.ks_critical(400, 400) == pytest.approx(stats.kstwo.isf(0.05, 200), rel=0.02)


def test_normalised_wasserstein_matches_scipy_on_binned_data() -> None:
    rng = np.random.default_rng(15)
    a, b = rng.lognormal(3.5, 1.0, 20_000), rng.lognormal(3.6, 1.1, 10_000)
    p = numeric_profile("amount", fine(a), 10)
    f = numeric_drift(p, fine(b))
    xa, xb = np.repeat(feature_bin_mid(p.fine.idx), p.fine.counts), np.repeat(feature_bin_mid(fine(b).idx),
                                                                                fine(b).counts)
    want = stats.wasserstein_distance(xa, xb) / np.std(xa)
    assert f.wasserstein == pytest.approx(want, rel=1e-9)
    raw = stats.wasserstein_distance(a, b) / np.std(a)
    assert f.wasserstein == pytest.approx(raw, rel=0.03)  # fine bins are ~2 % wide


def test_bh_matches_statsmodels() -> None:
    rng = np.random.default_rng(16)
    p = rng.random(17) ** 3
    got = ds.bh_adjust([*p.tolist(), None])
    want = multipletests(p, method="fdr_bh")[1]
    assert got[:-1] == pytest.approx(want.tolist(), rel=1e-12) and got[-1] is None


def test_prevalence_newcombe_interval_and_test_match_statsmodels() -> None:
    for k1, n1, k0, n0 in [(60, 2000, 200, 10_000), (3, 150, 40, 1000), (0, 80, 5, 500)]:
        d, lo, hi = ds.newcombe_diff(k1, n1, k0, n0)
        want = confint_proportions_2indep(k1, n1, k0, n0, method="newcomb", compare="diff")
        assert d == pytest.approx(k1 / n1 - k0 / n0)
        assert (lo, hi) == pytest.approx(want, abs=1e-10)
        conf = np.zeros((3, 2), np.int64)
        conf[POS, 1], conf[NEG, 0], conf[2, 0] = k1, n1 - k1, 999  # unlabelled predictions do not count
        prev = prevalence_drift(k0, n0, conf)
        if min(n1, n0) * min(k1 + k0, n1 + n0 - k1 - k0) / (n1 + n0) >= 5:  # no sparse cell: the score test
            assert prev.current.n == n1 and prev.p_value == pytest.approx(proportions_ztest([k1, k0], [n1, n0])[1])
        else:  # an expected count below 5: the exact conditional (permutation) p-value, by seeded Monte Carlo
            assert prev.current.n == n1 and prev.p_value == pytest.approx(_exact_2x2(k1, n1, k0, n0), abs=0.04)


def _exact_2x2(k1: int, n1: int, k0: int, n0: int) -> float:
    """P(|X − E| ≥ |k1 − E|) for X ~ hypergeometric(N, K, n1): the exact conditional χ² (distance) p-value."""
    big_k, big_n = k1 + k0, n1 + n0
    x = np.arange(max(0, big_k - n0), min(big_k, n1) + 1)
    e = n1 * big_k / big_n
    pmf = stats.hypergeom.pmf(x, big_n, big_k, n1)
    return float(pmf[np.abs(x - e) >= abs(k1 - e) - 1e-9].sum())


# --- noise floors, tested by simulation -----------------------------------------------------------
_EDGES = feature_bin_lower(np.arange(N_FEATURE_BINS + 1))
_P_NORMAL = np.diff(stats.norm(1000.0, 300.0).cdf(_EDGES))
_P_NORMAL /= _P_NORMAL.sum()


@pytest.mark.parametrize("n_ref,n_cur", [(200, 200), (200_000, 50_000)])
def test_noise_floors_are_95th_percentiles_under_no_drift(n_ref: int, n_cur: int) -> None:
    """Independent reference/current samples of one distribution: each floor is exceeded ~5 % of the time."""
    rng = np.random.default_rng(17)
    trials, over = 300, {"psi": 0, "js": 0, "wasserstein": 0, "ks": 0}
    for _ in range(trials):
        r, c = rng.multinomial(n_ref, _P_NORMAL), rng.multinomial(n_cur, _P_NORMAL)
        ir, ic = np.flatnonzero(r), np.flatnonzero(c)
        f = numeric_drift(numeric_profile("x", FineSample(ir, r[ir]), 10), FineSample(ic, c[ic]))
        assert f.ks is not None and f.psi is not None and f.js is not None and f.wasserstein is not None
        nf = f.noise_floor
        over["psi"] += f.psi > nf.psi  # type: ignore[operator]
        over["js"] += f.js > nf.js  # type: ignore[operator]
        over["wasserstein"] += f.wasserstein > nf.wasserstein  # type: ignore[operator]
        over["ks"] += f.ks.stat > nf.ks  # type: ignore[operator]
    for name, k in over.items():
        assert 0.015 <= k / trials <= 0.10, (name, k / trials)


def test_psi_expectation_formula_by_simulation() -> None:
    """E[PSI] ≈ (k−1)(1/n_ref + 1/n_cur) when every bin holds many counts."""
    rng = np.random.default_rng(18)
    p = np.full(10, 0.1)
    r, c = rng.multinomial(5000, p, size=4000), rng.multinomial(2000, p, size=4000)
    assert np.mean(ds.psi(r, c)) == pytest.approx(ds.psi_expected(10, 5000, 2000), rel=0.05)


def test_psi_expected_matches_simulated_no_drift_mean_with_empty_bins() -> None:
    """`psi_expected` of every feature of a report against the mean PSI of 150 no-drift windows (400 against a
    5,600-prediction reference, features with empty underflow/overflow/other/missing bins): counting those bins
    as populated it read 1.3–1.6 × the simulated mean for the numeric features (0.0348 vs 0.0224)."""
    rng = np.random.default_rng(40)
    profile = build_profile(*draw_window(rng, 5_600))
    psis: dict[str, list[float]] = {}
    expected: dict[str, float] = {}
    for _ in range(150):
        for f in drift_report(profile, *draw_window(rng, 400)).features:
            psis.setdefault(f.feature, []).append(f.psi)  # type: ignore[arg-type]
            expected[f.feature] = f.noise_floor.psi_expected  # type: ignore[assignment]
    for name, values in psis.items():
        assert 0.75 <= expected[name] / np.mean(values) <= 1.15, (name, expected[name], np.mean(values))


# --- the full report: no false alarm, detection ---------------------------------------------------
def _null_stream(seed: int, n: int, cfg: DriftThresholds = DriftThresholds()) -> tuple[tuple[str, ...], bool, bool]:
    rng = np.random.default_rng(seed)
    profile = build_profile(*draw_window(rng, n))  # reference from one draw ...
    r = drift_report(profile, *draw_window(rng, n), cfg)  # ... current window from another, same distributions
    assert len(r.features) == 8 and r.score is not None
    assert all(f.drifted == (f.severity != "none") for f in r.features)
    return r.drifted, r.score.drifted, r.prevalence.drifted


def test_no_false_alarm_on_ten_seeded_no_drift_streams_large_windows() -> None:
    """n = 200 k: noise floors and p-values are tiny, but no statistic reaches its threshold."""
    for seed in range(10):
        assert _null_stream(seed, 200_000) == ((), False, False), seed


def test_no_false_alarm_on_ten_seeded_no_drift_streams_small_windows() -> None:
    """n = 200 (reference and window): no call in 9 streams; seed 7 is a genuine fluke of the draw.

    In seed 7 the reference holds 0 missing amounts of 200 (P = 0.98^200 ≈ 1.8 %) and the window 6,
    and the window's amounts sit higher (KS p = 0.004, PSI 0.46, beyond its floor ≈ 0.30 and beyond
    the 99.5th percentile of PSI under no drift): at alpha 0.05 (the default before issue 15 §4) that
    is a correct call on these data. The long-run rate is pinned by the next test.
    """
    alarms = {seed: _null_stream(seed, 200, DriftThresholds(alpha=0.05)) for seed in range(10)}
    assert {s: a for s, a in alarms.items() if a != ((), False, False)} == {7: (("amount",), False, False)}
    # at the default per-report false-alarm rate (alpha 0.01, issue 15 §4) the fluke is not called
    assert {seed: _null_stream(seed, 200) for seed in range(10)} == {seed: ((), False, False) for seed in range(10)}


def test_false_alarm_rate_at_small_windows_is_below_the_fdr_level() -> None:
    """150 seeded no-drift streams at n = 200: at most 5 % of reports call any drift.

    (≈ 2 % over 800 streams measured in development: the FDR level bounds it, the floors lower it.)
    """
    results = [_null_stream(seed, 200) for seed in range(1000, 1150)]
    streams = sum(1 for f, s, p in results if f or s or p)
    features = sum(len(f) for f, _, _ in results)
    assert streams <= 0.05 * len(results), streams
    assert features <= 0.01 * 8 * len(results), features


def test_amount_scaled_by_1_5_is_detected_and_ranked_first() -> None:
    rng = np.random.default_rng(21)
    profile = build_profile(*draw_window(rng, 200_000))
    r = drift_report(profile, *draw_window(rng, 50_000, amount_scale=1.5))
    top = r.features[0]
    assert top.feature == "amount" and top.drifted and top.severity in ("warning", "alert")
    assert top.ks is not None and top.ks.p_adjusted is not None and top.ks.p_adjusted < 1e-6
    assert top.psi is not None and top.psi > 0.1 and top.noise_floor.psi is not None and top.psi > top.noise_floor.psi
    assert top.wasserstein is not None and top.wasserstein > 10 * top.noise_floor.wasserstein  # type: ignore[operator]
    assert r.drifted == ("amount",)


def test_country_share_change_is_detected() -> None:
    rng = np.random.default_rng(22)
    profile = build_profile(*draw_window(rng, 100_000))
    r = drift_report(profile, *draw_window(rng, 20_000, country_shift=0.2))
    country = next(f for f in r.features if f.feature == "country")
    assert country.drifted and country.severity == "alert" and r.features[0].feature == "country"
    assert country.chi2 is not None and country.chi2.p_adjusted is not None and country.chi2.p_adjusted < 1e-6
    assert country.ks is None and country.wasserstein is None
    assert r.drifted == ("country",)


def test_missing_share_jump_on_numeric_feature_is_detected() -> None:
    rng = np.random.default_rng(23)
    profile = build_profile(*draw_window(rng, 50_000))
    r = drift_report(profile, *draw_window(rng, 20_000, amount_missing=0.30))
    amount = next(f for f in r.features if f.feature == "amount")
    assert amount.drifted and amount.missing_current == pytest.approx(0.30, abs=0.01)
    assert amount.missing_test is not None and amount.missing_test.p_adjusted < 1e-6  # type: ignore[operator]
    assert amount.ks is not None and amount.ks.p_value > 1e-3  # the value distribution itself did not move


def test_small_shift_at_huge_n_is_significant_but_not_called() -> None:
    """Sample-size awareness at the other end: p ≈ 0 for a 3 % scale change, PSI far below 0.1."""
    rng = np.random.default_rng(24)
    profile = build_profile(*draw_window(rng, 200_000))
    r = drift_report(profile, *draw_window(rng, 200_000, amount_scale=1.03))
    amount = next(f for f in r.features if f.feature == "amount")
    assert amount.ks is not None and amount.ks.p_adjusted is not None and amount.ks.p_adjusted < 0.05
    assert amount.psi is not None and amount.psi < 0.1 and not amount.drifted


def test_unseen_categories_empty_window_and_prevalence() -> None:
    rng = np.random.default_rng(25)
    feats, sh, conf = draw_window(rng, 5_000)
    profile = build_profile(feats, sh, conf)
    cur = dict(draw_window(rng, 1_000)[0])
    cur["channel"] = FeatureHist({}, {"web": 500, "crypto": 300, "voice": 200}, 0)
    del cur["hour"]
    conf2 = np.zeros((3, 2), np.int64)
    conf2[POS, 0], conf2[NEG, 0] = 150, 850  # prevalence jumps to 15 %
    r = drift_report(profile, cur, sh, conf2)
    ch = next(f for f in r.features if f.feature == "channel")
    assert ch.unseen_share == pytest.approx(0.5) and ch.drifted and ch.severity == "alert"
    hour = next(f for f in r.features if f.feature == "hour")
    # issue 15.2: a tracked feature missing from every current prediction (its key dropped upstream) is all
    # missing and drifted; only a window whose prediction count is unknown (no conf) has no current values
    assert hour.n_current == 1000 and hour.missing_current == 1.0 and hour.drifted and hour.severity == "alert"
    hour0 = next(f for f in drift_report(profile, cur, sh, None).features if f.feature == "hour")
    assert hour0.n_current == 0 and hour0.psi is None and hour0.ks is None and not hour0.drifted
    assert r.prevalence.drifted and r.prevalence.current.value == pytest.approx(0.15)
    ref_prev = conf[POS].sum() / conf[:2].sum()
    assert r.prevalence.reference == pytest.approx(ref_prev)
    assert r.prevalence.difference is not None and r.prevalence.difference[1] > 0
    empty = categorical_drift(profile.feature("country"), None)  # type: ignore[arg-type]
    assert empty.psi is None and empty.chi2 is None and empty.unseen_share is None


def test_json_contract() -> None:
    rng = np.random.default_rng(26)
    profile = build_profile(*draw_window(rng, 5_000))
    doc = drift_report(profile, *draw_window(rng, 5_000, amount_scale=2.0)).to_json()
    assert set(doc) >= {"features", "score", "prevalence"}
    for f in [*doc["features"], doc["score"]]:  # type: ignore[misc]
        assert set(f) >= {"feature", "kind", "psi", "js", "ks", "chi2", "wasserstein", "missing_share",
                          "unseen_share", "noise_floor", "drifted", "severity", "n_reference", "n_current"}
        assert set(f["missing_share"]) >= {"reference", "current"} and set(f["noise_floor"]) >= {"psi", "js"}
        assert f["severity"] in ("none", "warning", "alert")
        test = f["ks"] if f["kind"] == "numeric" else f["chi2"]
        assert set(test) >= {"stat", "p_value", "p_adjusted"}
    assert set(doc["prevalence"]) >= {"reference", "current", "drifted"}  # type: ignore[arg-type]
    assert set(doc["prevalence"]["current"]) >= {"value", "low", "high", "n"}  # type: ignore[index]
    sev = [("none", "warning", "alert").index(f["severity"]) for f in doc["features"]]  # type: ignore[index]
    assert sev == sorted(sev, reverse=True) and doc["features"][0]["feature"] == "amount"  # type: ignore[index]


def test_drift_over_20_features_of_a_1m_prediction_window_works_on_histograms_alone() -> None:
    """A window of 1 M predictions (7 days at ~6k/h) on 12 numeric + 8 categorical features is judged from its
    histograms alone (its latency, flat in event count, is measured by benchmarks/drift_bench.py, not here)."""
    rng = np.random.default_rng(27)

    def window(n: int) -> tuple[dict[str, FeatureHist], np.ndarray, np.ndarray]:
        feats: dict[str, FeatureHist] = {}
        for j in range(12):
            idx = feature_bin(np.sign(j % 3 - 0.5) * rng.lognormal(3 + 0.2 * j, 1 + 0.1 * j, 200_000))
            counts = rng.multinomial(n, np.bincount(idx, minlength=N_FEATURE_BINS) / 200_000)
            nz = np.flatnonzero(counts)
            feats[f"num{j}"] = FeatureHist(dict(zip(nz.tolist(), counts[nz].tolist())), {}, n // 100)
        for j in range(8):
            k = rng.multinomial(n, np.full(50, 1 / 50))
            feats[f"cat{j}"] = FeatureHist({}, {f"c{i}": int(x) for i, x in enumerate(k)}, 0)
        sh = rng.multinomial(n, np.bincount(score_bin(rng.beta(0.5, 8, 100_000)), minlength=N_SCORE_BINS) / 100_000)
        return feats, sh, np.array([[n * 9 // 10, 0], [n // 50, 0], [n // 10, 0]])

    profile = build_profile(*window(2_000_000))
    cur = window(1_000_000)
    r = drift_report(profile, *cur)
    assert len(r.features) == 20


# --- the project's simulator: drift at day 21 ------------------------------------------------------
def _simulated_days(days: int) -> dict[int, tuple[dict[str, FeatureHist], np.ndarray, np.ndarray]]:
    """Daily windows of driftline.simulate's stream, binned as the engine does (bools as "true"/"false")."""
    from datetime import datetime

    from driftline.ingest.simulate import SimSpec, stream

    start = 1_767_225_600.0  # 2026-01-01T00:00:00Z
    spec = SimSpec(start=start, days=float(days), per_day=2000)
    num: dict[int, dict[str, list[float]]] = {}
    cat: dict[int, dict[str, dict[str, int]]] = {}
    miss: dict[int, dict[str, int]] = {}
    scores: dict[int, list[float]] = {}
    for ev in stream(spec):
        if ev["type"] != "prediction":
            continue
        day = int((datetime.fromisoformat(ev["ts"]).timestamp() - start) // 86400)
        scores.setdefault(day, []).append(ev["score"])
        for name, v in ev["features"].items():
            if v is None:
                miss.setdefault(day, {})[name] = miss.get(day, {}).get(name, 0) + 1
            elif isinstance(v, bool) or isinstance(v, str):
                key = ("true" if v else "false") if isinstance(v, bool) else v
                d = cat.setdefault(day, {}).setdefault(name, {})
                d[key] = d.get(key, 0) + 1
            else:
                num.setdefault(day, {}).setdefault(name, []).append(float(v))
    out = {}
    for day, sc in scores.items():
        feats = {n: num_hist(np.asarray(v), miss.get(day, {}).get(n, 0)) for n, v in num[day].items()}
        feats |= {n: FeatureHist({}, c, miss.get(day, {}).get(n, 0)) for n, c in cat[day].items()}
        for n, m in miss.get(day, {}).items():
            feats.setdefault(n, FeatureHist({}, {}, m))
        out[day] = (feats, np.bincount(score_bin(np.asarray(sc)), minlength=N_SCORE_BINS), np.zeros((3, 2), np.int64))
    return out


def test_simulator_drift_is_detected_on_its_first_day_and_not_before() -> None:
    """driftline.simulate (seed 7, 2000/day): reference = days 0–13; daily windows 14–20 stay quiet,
    day 21 (drift start: amount ×1.4, new country mix) flags exactly those two features. The score's
    change only moves the 2 % fraud component (concept drift, seen in recall), so its marginal holds."""
    days = _simulated_days(22)
    ref_feats: dict[str, FeatureHist] = {}
    ref_score = np.zeros(N_SCORE_BINS, np.int64)
    for d in range(14):
        for name, fh in days[d][0].items():
            ref_feats.setdefault(name, FeatureHist()).add(fh)
        ref_score += days[d][1]
    profile = build_profile(ref_feats, ref_score, None)
    assert len(profile.features) == 9
    for d in range(14, 21):
        r = drift_report(profile, *days[d])
        assert r.drifted == () and r.score is not None and not r.score.drifted, (d, r.drifted)
    r = drift_report(profile, *days[21])
    assert set(r.drifted) == {"amount", "country"} and {f.feature for f in r.features[:2]} == {"amount", "country"}
    assert r.score is not None and not r.score.drifted and r.score.psi is not None and r.score.psi < 0.02
