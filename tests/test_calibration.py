"""Calibration layer against scikit-learn / statsmodels / scipy on seeded data, and the seeds' examples."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.special import expit, logit
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss
from sklearn.metrics import log_loss as sk_log_loss
from statsmodels.stats.proportion import proportion_confint

from driftline.analysis.calibration import (
    brier_decomposition,
    brier_score,
    calibration_report,
    ece_noise_floor,
    fit_temperature,
    log_loss,
    reliability,
    reliability_table,
    reliability_table_mass,
)
from driftline.core.stats import NEG, POS, BucketStats


from helpers import make_stats  # noqa: E402


def miscalibrated(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Underconfident scores spread over [0, 1]: the true probability is sharper, so gaps change sign."""
    rng = np.random.default_rng(seed)
    p = rng.beta(0.7, 1.5, n)
    y = (rng.random(n) < expit(1.8 * logit(p) + 0.3)).astype(int)
    return p, y


def direct_ece(p: np.ndarray, y: np.ndarray, edges: np.ndarray) -> float:
    """ECE with [lo, hi) bins on the given edges, computed per prediction."""
    which = np.clip(np.searchsorted(edges, p, side="right") - 1, 0, len(edges) - 2)
    total = 0.0
    for k in range(len(edges) - 1):
        m = which == k
        if m.any():
            total += m.mean() * abs(p[m].mean() - y[m].mean())
    return total


# --- reliability tables -------------------------------------------------------------------------
def test_equal_width_table_matches_numpy_and_sklearn_calibration_curve() -> None:
    p, y = miscalibrated(5000, seed=1)
    table = reliability_table(make_stats(p, y), n_bins=10)
    which = np.clip(np.floor(p * 10).astype(int), 0, 9)
    for k, b in enumerate(table.bins):
        m = which == k
        assert b.n == int(m.sum())
        assert b.observed.k == int(y[m].sum())
        assert b.mean_score == pytest.approx(p[m].mean(), abs=1e-12)
    prob_true, prob_pred = calibration_curve(y, p, n_bins=10, strategy="uniform")
    nonempty = [b for b in table.bins if b.n]
    np.testing.assert_allclose([b.observed.value for b in nonempty], prob_true, atol=1e-12)
    np.testing.assert_allclose([b.mean_score for b in nonempty], prob_pred, atol=1e-12)
    assert table.ece == pytest.approx(direct_ece(p, y, np.linspace(0, 1, 11)), abs=1e-12)
    assert table.ece > 0.05  # clearly miscalibrated, not a vacuous 0


def test_seed_001_ece_of_ten_answers_is_0_265() -> None:
    """Seed 001: bins (0.4,0.6] 2 answers conf 0.575 acc 0.5; (0.6,0.8] 4, 0.725, 0.25; (0.8,1] 4, 0.9, 0.75."""
    conf = np.array([0.56, 0.59, 0.65, 0.72, 0.75, 0.78, 0.85, 0.88, 0.92, 0.95])
    correct = np.array([1, 0, 1, 0, 0, 0, 1, 1, 1, 0])
    table = reliability_table(make_stats(conf, correct), n_bins=5)
    assert table.ece == pytest.approx(0.265, abs=1e-12)
    assert [b.n for b in table.bins] == [0, 0, 2, 4, 4]
    assert [b.mean_score for b in table.bins[2:]] == pytest.approx([0.575, 0.725, 0.9])
    assert [b.observed.value for b in table.bins[2:]] == pytest.approx([0.5, 0.25, 0.75])
    assert table.bins[0].mean_score is None and table.bins[0].observed.value is None


def test_equal_mass_bins_hold_equal_counts_and_match_direct_computation() -> None:
    p, y = miscalibrated(6000, seed=2)
    stats = make_stats(p, y)
    table = reliability_table_mass(stats, n_bins=10)
    assert len(table.bins) == 10 and table.strategy == "mass"
    largest_fine_bin = int((stats.hist[NEG] + stats.hist[POS]).max())
    for b in table.bins:
        assert abs(b.n - 600) <= largest_fine_bin
    edges = np.array([b.low for b in table.bins] + [1.0])
    assert edges[0] == 0.0 and np.all(np.diff(edges) > 0)
    which = np.clip(np.searchsorted(edges, p, side="right") - 1, 0, 9)
    for k, b in enumerate(table.bins):
        m = which == k
        assert b.n == int(m.sum()) and b.observed.k == int(y[m].sum())
        assert b.mean_score == pytest.approx(p[m].mean(), abs=1e-12)
        low, high = proportion_confint(b.observed.k, b.n, alpha=0.05, method="wilson")
        assert (b.observed.low, b.observed.high) == pytest.approx((low, high), abs=1e-9)
    assert table.ece == pytest.approx(direct_ece(p, y, edges), abs=1e-12)
    # sklearn's quantile bins (percentile edges, not snapped to the fine grid) give nearly the same ECE
    prob_true, prob_pred = calibration_curve(y, p, n_bins=10, strategy="quantile")
    assert table.ece == pytest.approx(np.mean(np.abs(prob_true - prob_pred)), abs=0.01)


def test_equal_mass_never_splits_a_heavy_fine_bin() -> None:
    p = np.array([0.3] * 90 + [0.7] * 10)
    y = np.array([0, 1] * 45 + [1] * 10)
    table = reliability(make_stats(p, y), n_bins=10, strategy="mass")
    assert [b.n for b in table.bins] == [90, 10]
    assert table.ece == pytest.approx(0.9 * 0.2 + 0.1 * 0.3)


def test_empty_window_gives_none_not_nan() -> None:
    report = calibration_report(BucketStats())
    doc = report.to_json()
    assert doc["ece"] == {"width": None, "mass": None}
    assert doc["brier"]["brier"] is None and doc["temperature"]["tau"] is None
    assert doc["noise_floor"]["width"]["mean"] is None
    assert "NaN" not in json.dumps(doc)


# --- Brier and log loss ---------------------------------------------------------------------------
def test_brier_and_log_loss_exact_against_sklearn() -> None:
    p, y = miscalibrated(3000, seed=3)
    p[:3], y[:3] = [0.0, 1.0, 1.0], [1, 0, 1]  # extreme scores: log loss clipped as in sklearn
    stats = make_stats(p, y)
    assert brier_score(stats) == pytest.approx(brier_score_loss(y, p), abs=1e-9)
    assert log_loss(stats) == pytest.approx(sk_log_loss(y, p), rel=1e-9)


@pytest.mark.parametrize("strategy", ["width", "mass"])
def test_brier_decomposition_identity_and_terms(strategy: str) -> None:
    p, y = miscalibrated(4000, seed=4)
    d = brier_decomposition(make_stats(p, y), n_bins=10, strategy=strategy)
    assert d.brier == pytest.approx(brier_score_loss(y, p), abs=1e-9)
    total = d.reliability - d.resolution + d.uncertainty + d.within_bin_variance - d.within_bin_covariance
    assert total == pytest.approx(d.brier, abs=1e-9)
    # the three classic terms against a per-prediction computation on the same bins
    table = reliability(make_stats(p, y), n_bins=10, strategy=strategy)
    edges = np.array([b.low for b in table.bins] + [1.0])
    which = np.clip(np.searchsorted(edges, p, side="right") - 1, 0, len(edges) - 2)
    base, n = y.mean(), len(y)
    rel = sum((which == k).sum() * (p[which == k].mean() - y[which == k].mean()) ** 2
              for k in range(len(edges) - 1) if (which == k).any()) / n
    res = sum((which == k).sum() * (y[which == k].mean() - base) ** 2
              for k in range(len(edges) - 1) if (which == k).any()) / n
    assert d.reliability == pytest.approx(rel, abs=1e-12)
    assert d.resolution == pytest.approx(res, abs=1e-12)
    assert d.uncertainty == pytest.approx(base * (1 - base), abs=1e-12)
    assert d.skill == pytest.approx(1 - brier_score_loss(y, p) / (base * (1 - base)), abs=1e-9)


def test_brier_three_term_decomposition_exact_when_scores_constant_per_bin() -> None:
    rng = np.random.default_rng(5)
    p = rng.choice([0.05, 0.15, 0.35, 0.55, 0.85], 2000)
    y = (rng.random(2000) < p).astype(int)
    d = brier_decomposition(make_stats(p, y), n_bins=10)
    assert abs(d.within_bin_variance) < 1e-12 and abs(d.within_bin_covariance) < 1e-12
    assert d.reliability - d.resolution + d.uncertainty == pytest.approx(brier_score_loss(y, p), abs=1e-9)


# --- ECE noise floor (seed 003) -------------------------------------------------------------------
def _seed003_floor(p: np.ndarray, draws: int, seed: int) -> np.ndarray:
    """Seed 003's per-prediction resampling: ECE of labels drawn from the model's own probabilities."""
    rng = np.random.default_rng(seed)
    edges = np.linspace(0, 1, 6)
    return np.array([direct_ece(p, (rng.random(len(p)) < p).astype(float), edges) for _ in range(draws)])


def test_noise_floor_matches_per_prediction_resampling_of_seed_003() -> None:
    rng = np.random.default_rng(6)
    p = expit(rng.normal(-1.5, 1.5, 800))
    y = (rng.random(800) < p).astype(int)
    floor = ece_noise_floor(make_stats(p, y), n_bins=5, draws=400, seed=0)
    ref = _seed003_floor(p, 400, seed=1)
    assert floor.mean == pytest.approx(ref.mean(), rel=0.1)
    assert floor.p95 == pytest.approx(np.percentile(ref, 95), rel=0.15)
    assert 0.005 < floor.mean < 0.04  # the seed's 800-prediction router: mean 0.016, p95 0.027


def test_calibrated_model_sits_at_its_noise_floor_seed_003() -> None:
    """Seed 003: perfectly calibrated labels still show ECE ~ the floor; ECE beyond p95 only ~5 % of the time."""
    eces, means, beyond = [], [], 0
    for seed in range(30):
        rng = np.random.default_rng(100 + seed)
        p = expit(rng.normal(-1.5, 1.5, 800))
        y = (rng.random(800) < p).astype(int)
        floor = ece_noise_floor(make_stats(p, y), n_bins=5, draws=200, seed=seed)
        eces.append(floor.ece)
        means.append(floor.mean)
        beyond += bool(floor.beyond_floor)
    assert np.mean(eces) == pytest.approx(np.mean(means), rel=0.2)
    assert beyond <= 5


def test_miscalibrated_model_far_above_noise_floor() -> None:
    rng = np.random.default_rng(7)
    p = expit(rng.normal(-1.5, 1.5, 800))
    y = (rng.random(800) < p).astype(int)
    floor = ece_noise_floor(make_stats(np.sqrt(p), y), n_bins=5, draws=200, seed=0)
    assert floor.beyond_floor is True
    assert floor.ece > 3 * floor.p95


def test_noise_floor_is_seeded_and_reproducible() -> None:
    p, y = miscalibrated(2000, seed=8)
    stats = make_stats(p, y)
    a, b = ece_noise_floor(stats, seed=3), ece_noise_floor(stats, seed=3)
    c = ece_noise_floor(stats, seed=4)
    assert (a.mean, a.p95) == (b.mean, b.p95)
    assert a.mean != c.mean


# --- temperature scaling --------------------------------------------------------------------------
def _direct_tau(p: np.ndarray, y: np.ndarray) -> float:
    """Per-prediction temperature fit (the reference the fine-bin fit must reproduce)."""
    z = logit(np.clip(p, 1e-15, 1 - 1e-15))
    res = minimize_scalar(lambda t: sk_log_loss(y, expit(z / t), labels=[0, 1]), bounds=(0.05, 20),
                          method="bounded", options={"xatol": 1e-7})
    return float(res.x)


@pytest.mark.parametrize("tau0", [2.0, 0.6])
def test_temperature_recovers_known_tau(tau0: float) -> None:
    rng = np.random.default_rng(9)
    z = rng.normal(-2.0, 2.5, 40000)
    p = expit(z)
    y = (rng.random(len(z)) < expit(z / tau0)).astype(int)
    fit = fit_temperature(make_stats(p, y))
    assert fit.tau == pytest.approx(tau0, rel=0.05)
    assert fit.tau == pytest.approx(_direct_tau(p, y), abs=0.005)
    assert fit.log_loss_before == pytest.approx(sk_log_loss(y, p), rel=1e-9)
    assert fit.log_loss_after == pytest.approx(sk_log_loss(y, expit(z / fit.tau)), abs=1e-4)
    assert fit.log_loss_after < fit.log_loss_before
    assert fit.ece_after < fit.ece_before / 2
    assert fit.binning_error < 1e-4 and not fit.at_bound


def test_temperature_near_one_for_calibrated_scores_and_none_without_both_classes() -> None:
    rng = np.random.default_rng(10)
    p = expit(rng.normal(-2.0, 2.0, 20000))
    y = (rng.random(len(p)) < p).astype(int)
    assert fit_temperature(make_stats(p, y)).tau == pytest.approx(1.0, abs=0.06)
    only_neg = fit_temperature(make_stats(p[:100], np.zeros(100, dtype=int)))
    assert only_neg.tau is None and only_neg.log_loss_after is None
    assert only_neg.log_loss_before == pytest.approx(sk_log_loss(np.zeros(100), p[:100], labels=[0, 1]))


def test_report_json_is_plain() -> None:
    p, y = miscalibrated(1000, seed=11)
    doc = calibration_report(make_stats(p, y), draws=50).to_json()
    text = json.dumps(doc)
    assert "NaN" not in text
    assert doc["ece"]["width"] == reliability_table(make_stats(p, y)).ece
    assert doc["brier"]["decomposition"] == "binned"
