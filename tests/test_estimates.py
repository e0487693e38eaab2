"""Base-rate effect (seed 000) and label-free early-warning estimates against direct computations."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.special import expit
from statsmodels.stats.proportion import proportion_confint

from driftline.analysis.estimates import (
    base_rate_effect,
    compare_estimate,
    early_warning,
    implied_precision,
    realised_metrics,
)
from driftline.core.grids import score_bin
from driftline.core.stats import NEG, POS, UNL, BucketStats


from helpers import make_stats  # noqa: E402


def confusion_stats(tp: int, fn: int, fp: int, tn: int) -> BucketStats:
    """Stats with the given labelled confusion at threshold 0.5 (flagged score 0.8, unflagged 0.2)."""
    b = BucketStats()
    hi, lo = int(score_bin(np.array([0.8]))[0]), int(score_bin(np.array([0.2]))[0])
    for state, flagged, count in ((POS, True, tp), (POS, False, fn), (NEG, True, fp), (NEG, False, tn)):
        for _ in range(count):
            b.add_prediction(state, flagged, hi if flagged else lo, 0.8 if flagged else 0.2)
    return b


def fraud_scores(n: int, seed: int) -> np.ndarray:
    """Calibrated-looking fraud scores: a few percent positive on average, some above 0.5."""
    rng = np.random.default_rng(seed)
    return expit(rng.normal(-4.5, 2.2, n))


# --- base-rate effect (seed 000) ------------------------------------------------------------------
def test_implied_precision_seed_000() -> None:
    """Seed 000: recall 0.8, FPR 6/90: precision 8/14 = 0.571 at 10 % fraud, 0.197 at 2 %."""
    assert implied_precision(0.8, 6 / 90, 0.10) == pytest.approx(8 / 14, abs=1e-12)
    assert implied_precision(0.8, 6 / 90, 0.02) == pytest.approx(1600 / (1600 + 98000 * 6 / 90), abs=1e-12)
    assert round(implied_precision(0.8, 6 / 90, 0.02), 3) == 0.197
    assert implied_precision(0.0, 0.0, 0.3) is None
    with pytest.raises(ValueError):
        implied_precision(0.8, 1.2, 0.02)


def test_base_rate_effect_seed_000_sample_to_real_traffic() -> None:
    """Seed 000: the 100-case sample (8 tp, 2 fn, 6 fp, 84 tn) against a month of traffic at 2 % fraud."""
    reference = confusion_stats(8, 2, 6, 84)
    current = confusion_stats(1600, 400, 6533, 98000 - 6533)
    eff = base_rate_effect(current, reference)
    assert eff.source == "reference"
    assert eff.recall.value == pytest.approx(0.8) and eff.fpr.value == pytest.approx(6 / 90)
    assert eff.reference_prevalence == pytest.approx(0.10)
    assert eff.prevalence.value == pytest.approx(0.02)
    assert eff.prevalence_ratio == pytest.approx(0.2)
    low, high = proportion_confint(2000, 100000, alpha=0.05, method="wilson")
    assert (eff.prevalence.low, eff.prevalence.high) == pytest.approx((low, high), abs=1e-12)
    assert round(eff.implied_precision, 3) == 0.197
    assert eff.implied_precision_at_reference == pytest.approx(8 / 14)
    assert round(eff.observed_precision.value, 3) == 0.197  # 1600 / 8133
    assert eff.implied_low < eff.implied_precision < eff.implied_high
    # the box interval is wide: 10 frauds pin recall down only loosely
    assert eff.implied_low < 0.12 and eff.implied_high > 0.3
    assert json.loads(json.dumps(eff.to_json()))["implied_precision"]["value"] == eff.implied_precision


def test_base_rate_effect_from_current_window_equals_observed_precision() -> None:
    current = confusion_stats(37, 11, 142, 4810)
    eff = base_rate_effect(current, reference_prevalence=0.05)
    assert eff.source == "current" and eff.reference_prevalence == 0.05
    assert eff.implied_precision == pytest.approx(37 / (37 + 142), abs=1e-12)
    assert eff.implied_precision_at_reference == pytest.approx(implied_precision(37 / 48, 142 / 4952, 0.05))
    empty = base_rate_effect(BucketStats())
    assert empty.prevalence.value is None and empty.implied_precision is None and empty.implied_low is None


# --- label-free early warning ---------------------------------------------------------------------
def test_early_warning_sums_match_direct_computation() -> None:
    p = fraud_scores(20000, seed=1)
    ew = early_warning(make_stats(p, np.full(len(p), UNL)), threshold=0.5)
    f = p >= 0.5
    assert ew.n == len(p) and ew.flagged == int(f.sum())
    assert ew.expected_positives.value == pytest.approx(p.sum(), rel=1e-12)
    assert ew.expected_positives.sd ** 2 == pytest.approx(np.sum(p * (1 - p)), rel=1e-9)
    assert ew.expected_tp.value == pytest.approx(p[f].sum(), rel=1e-12)
    assert ew.expected_tp.sd ** 2 == pytest.approx(np.sum(p[f] * (1 - p[f])), rel=0.01)
    assert ew.recall.value == pytest.approx(p[f].sum() / p.sum(), rel=1e-12)
    assert ew.precision.value == pytest.approx(p[f].mean(), rel=1e-12)
    assert ew.alert_rate.value == pytest.approx(f.mean())


def test_estimated_metrics_predict_realised_ones_on_calibrated_data() -> None:
    """Labels drawn from the scores: realised recall/precision/prevalence centre on the estimates, with the stated sd."""
    p = fraud_scores(20000, seed=2)
    ew = early_warning(make_stats(p, np.full(len(p), UNL)), threshold=0.5)
    rng = np.random.default_rng(3)
    f = p >= 0.5
    draws = {"recall": [], "precision": [], "prevalence": []}
    for _ in range(400):
        y = rng.random(len(p)) < p
        draws["recall"].append((y & f).sum() / y.sum())
        draws["precision"].append((y & f).sum() / f.sum())
        draws["prevalence"].append(y.mean())
    for name, values in draws.items():
        est = getattr(ew, name)
        values = np.asarray(values)
        assert values.mean() == pytest.approx(est.value, rel=0.02), name
        assert values.std() == pytest.approx(est.sd, rel=0.15), name
        inside = np.mean((values >= est.low) & (values <= est.high))
        assert 0.9 <= inside <= 0.99, name


def test_compare_estimate_with_realised_once_labels_mature() -> None:
    p = fraud_scores(20000, seed=4)
    rng = np.random.default_rng(5)
    y = (rng.random(len(p)) < p).astype(int)
    before = make_stats(p, np.full(len(p), UNL))
    after = make_stats(p, y)  # the same predictions, every label matured
    estimate = early_warning(before)
    realised = realised_metrics(after)
    assert realised.coverage.value == 1.0
    assert realised.recall.value == pytest.approx(((y == 1) & (p >= 0.5)).sum() / y.sum())
    # scope "all" on the matured window sees the same scores as "unlabelled" on the fresh one
    assert early_warning(after, scope="all").recall.value == pytest.approx(estimate.recall.value, rel=1e-12)
    cmp = compare_estimate(estimate, realised)
    by_name = {m.metric: m for m in cmp.metrics}
    assert set(by_name) == {"recall", "precision", "prevalence"}
    for name, m in by_name.items():
        assert m.error == pytest.approx(getattr(realised, name).value - getattr(estimate, name).value)
        assert m.within_interval is True, name
    doc = json.loads(json.dumps(cmp.to_json()))
    assert doc["metrics"][0]["estimated"]["estimated"] is True
    assert doc["metrics"][0]["realised"]["value"] == realised.recall.value


def test_unlabelled_scope_ignores_labelled_predictions() -> None:
    p = fraud_scores(3000, seed=6)
    states = np.where(np.arange(3000) < 1000, UNL, (p > 0.1).astype(int))
    ew = early_warning(make_stats(p, states))
    only = early_warning(make_stats(p[:1000], np.full(1000, UNL)))
    assert ew.n == 1000
    assert ew.recall.value == pytest.approx(only.recall.value, rel=1e-12)
    assert ew.expected_positives.sd == pytest.approx(only.expected_positives.sd, rel=1e-9)


def test_early_warning_json_marks_estimates_and_uses_none_when_empty() -> None:
    empty = early_warning(BucketStats())
    assert empty.n == 0 and empty.recall.value is None and empty.precision.value is None
    doc = empty.to_json()
    assert doc["estimated"] is True and doc["recall"]["estimated"] is True
    assert doc["alert_rate"]["estimated"] is False and doc["alert_rate"]["value"] is None
    assert "NaN" not in json.dumps(doc)
    with pytest.raises(ValueError):
        early_warning(BucketStats(), scope="labelled")


def test_early_warning_is_empty_once_every_prediction_is_labelled() -> None:
    """Labels move each score out of the unlabelled row, leaving float residue (~1e-17) in its score sums: with
    no unlabelled prediction left, `calibration` printed 'early warning (… of 0 predictions without a label …):
    recall ~0.000 [0.000, 0.000]' (expected positives 5.7e-17, sd 1.1e-8) instead of no estimate."""
    rng = np.random.default_rng(3)
    for trial in range(20):
        p = rng.uniform(0.0, 1.0, 200)
        b = BucketStats()
        bins = score_bin(p)
        for s, k in zip(p, bins):
            b.add_prediction(UNL, bool(s >= 0.5), int(k), float(s))
        for i in rng.permutation(len(p)):  # labels arrive in another order than the predictions
            b.add_prediction(UNL, bool(p[i] >= 0.5), int(bins[i]), float(p[i]), sign=-1)
            b.add_prediction(POS if rng.random() < p[i] else NEG, bool(p[i] >= 0.5), int(bins[i]), float(p[i]))
        ew = early_warning(b)
        assert ew.n == 0
        assert (ew.recall.value, ew.precision.value, ew.prevalence.value) == (None, None, None), trial
        assert ew.expected_positives.value == 0.0 and ew.expected_positives.sd == 0.0, trial
