"""Metrics from bucket statistics against scikit-learn on random streams, and the seeds' examples."""

import numpy as np
import pytest
from sklearn.metrics import (average_precision_score, brier_score_loss, confusion_matrix, log_loss,
                             roc_auc_score)

from driftline.analysis.calibration import reliability_table
from driftline.analysis.classification import classification
from driftline.core.grids import score_bin
from driftline.core.stats import NEG, POS, UNL, BucketStats

from helpers import MemoryState, outcome, pred


def _stream(rng, n, prevalence=0.1):
    y = (rng.random(n) < prevalence).astype(int)
    logits = rng.normal(np.where(y == 1, 1.0, -1.5), 1.3)
    p = 1 / (1 + np.exp(-logits))
    p = np.round(p, int(rng.integers(3, 8)))
    return y, p


@pytest.mark.parametrize("seed", range(5))
def test_conformance_with_sklearn(seed):
    rng = np.random.default_rng(seed)
    n = 3000
    y, p = _stream(rng, n, prevalence=rng.uniform(0.02, 0.4))
    st = MemoryState()
    raws = []
    for i in range(n):
        raws.append(pred(f"p{i}", float(p[i]), 1_700_000_000 + i * 37.0))
    labelled = rng.random(n) < 0.8
    for i in np.flatnonzero(labelled):
        raws.append(outcome(f"p{i}", int(y[i]), 1_700_000_000 + i * 37.0 + 5000))
    order = rng.permutation(len(raws))
    st.apply([raws[i] for i in order])
    m = classification(st.total())
    yl, pl = y[labelled], p[labelled]
    tn, fp, fn, tp = confusion_matrix(yl, pl >= 0.5, labels=[0, 1]).ravel()
    c = m.counts
    assert (c.tp, c.fp, c.fn, c.tn) == (tp, fp, fn, tn)
    assert c.predictions == n and c.labelled == labelled.sum()
    assert c.unlabelled_flagged == int((p[~labelled] >= 0.5).sum())
    assert m.roc_auc == pytest.approx(roc_auc_score(yl, pl), abs=0.002)
    assert m.average_precision == pytest.approx(average_precision_score(yl, pl), abs=0.002)
    assert m.brier == pytest.approx(brier_score_loss(yl, pl), abs=1e-9)
    assert m.log_loss == pytest.approx(log_loss(yl, pl), abs=1e-9)
    assert m.rates["recall"].value == pytest.approx(tp / (tp + fn))
    assert m.rates["alert_rate"].value == pytest.approx((p >= 0.5).mean())


def _confusion(tp, fn, fp, tn):
    b = BucketStats()
    for state, flagged, k in ((POS, True, tp), (POS, False, fn), (NEG, True, fp), (NEG, False, tn)):
        for _ in range(k):
            s = 0.9 if flagged else 0.1
            b.add_prediction(state, flagged, int(score_bin(np.array([s]))[0]), s)
    return b


def test_seed000_confusion_example():
    """Seed 000: 8 caught, 2 missed, 6 false alarms, 84 correct rejections."""
    m = classification(_confusion(8, 2, 6, 84))
    assert round(m.rates["precision"].value, 3) == 0.571
    assert round(m.rates["recall"].value, 2) == 0.80
    assert round(m.f1, 3) == 0.667
    assert round(m.rates["accuracy"].value, 2) == 0.92
    assert round(m.rates["fpr"].value, 3) == 0.067


def test_seed001_ece_example():
    """Seed 001: bins (0.4,0.6] 2 answers conf .575 acc .5; (0.6,0.8] 4, .725, .25; (0.8,1] 4, .9, .75 → 0.265."""
    b = BucketStats()
    answers = [(0.56, 1), (0.59, 0), (0.65, 1), (0.7, 0), (0.76, 0), (0.79, 0), (0.85, 1), (0.88, 1),
               (0.93, 1), (0.94, 0)]
    for conf, correct in answers:
        b.add_prediction(POS if correct else NEG, conf >= 0.5, int(score_bin(np.array([conf]))[0]), conf)
    t = reliability_table(b, n_bins=5)
    assert t.ece == pytest.approx(0.265, abs=1e-9)


def test_empty_window_metrics_are_null():
    m = classification(BucketStats()).to_json()
    assert m["metrics"]["recall"]["value"] is None and m["metrics"]["recall"]["n"] == 0
    assert m["metrics"]["roc_auc"]["value"] is None and m["metrics"]["ece"]["value"] is None
    assert m["label_coverage"]["value"] is None


def test_unlabelled_predictions_counted_in_coverage_not_rates():
    b = _confusion(3, 1, 2, 20)
    b.add_prediction(UNL, True, int(score_bin(np.array([0.7]))[0]), 0.7)
    m = classification(b)
    assert m.counts.predictions == 27 and m.counts.labelled == 26
    assert m.label_coverage.value == pytest.approx(26 / 27)
    assert m.rates["alert_rate"].value == pytest.approx(6 / 27)
