"""Estimates from score histograms follow the threshold the events carry (README: the event's own `threshold`
overrides the config), as the confusion counts do."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from driftline.analysis.estimates import early_warning, threshold_in_force
from driftline.cli import main
from driftline.core.grids import score_bin
from driftline.core.stats import NEG, POS, UNL, BucketStats

sys.path.insert(0, str(Path(__file__).parent))
from helpers import outcome, pred, replayed_db  # noqa: E402

T0 = 1_764_547_200.0  # 2025-12-01 00:00 UTC


def _stats(p: np.ndarray, labels: np.ndarray, cut: float) -> BucketStats:
    b = BucketStats()
    for s, k, y in zip(p, score_bin(p), labels):
        b.add_prediction(int(y), bool(s >= cut), int(k), float(s))
    return b


@pytest.mark.parametrize("cut", [0.7, 0.3, 0.5, 0.62])
def test_early_warning_at_the_events_threshold_matches_direct_sums(cut: float) -> None:
    """Reference: Σp over the predictions the events flagged / Σp, and the observed alert rate."""
    rng = np.random.default_rng(int(cut * 100))
    p = np.round(rng.uniform(0.0, 1.0, 800), 4)
    labels = np.where(np.arange(800) < 300, UNL, np.where(rng.random(800) < p, POS, NEG))
    stats = _stats(p, labels, cut)
    t = threshold_in_force(stats, 0.5)
    ew = early_warning(stats, t, "unlabelled")
    u = p[labels == UNL]
    assert ew.flagged == int((u >= cut).sum())
    assert ew.alert_rate.value == pytest.approx(float((u >= cut).mean()))
    assert ew.recall.value == pytest.approx(float(u[u >= cut].sum() / u.sum()), rel=1e-9)
    assert ew.precision.value == pytest.approx(float(u[u >= cut].mean()), rel=1e-9)
    if cut in (0.7, 0.3, 0.5):
        assert t == cut


def test_mixed_thresholds_keep_the_configured_one() -> None:
    p = np.array([0.55, 0.6, 0.6, 0.8])
    b = BucketStats()
    for s, k, flag in zip(p, score_bin(p), (False, True, False, True)):  # 0.6 flagged once: no single cut
        b.add_prediction(UNL, flag, int(k), float(s))
    assert threshold_in_force(b, 0.5) == 0.5


def test_calibration_early_warning_follows_event_thresholds(tmp_path: Path, capsys) -> None:
    """Events flagged at their own 0.7 (config 0.5): `calibration` estimated at 0.5 and printed an 'observed'
    alert rate of 0.49 where the events flagged 0.292 of the unlabelled predictions."""
    rng = np.random.default_rng(8)
    lines, p = [], np.round(rng.uniform(0.0, 1.0, 1000), 4)
    for i, s in enumerate(p):
        lines.append(pred(f"t{i}", s, T0 + i * 60, threshold=0.7))
        if i < 500:
            lines.append(outcome(f"t{i}", int(rng.random() < s), T0 + i * 60 + 3600))
    url = replayed_db(tmp_path, lines, capsys)
    assert main(["--db", url, "calibration", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    u = p[500:]
    ew = doc["early_warning"]
    assert doc["threshold_in_force"] == 0.7 and ew["threshold"] == 0.7
    assert ew["flagged"] == int((u >= 0.7).sum())
    assert ew["alert_rate"]["value"] == pytest.approx(float((u >= 0.7).mean()))
    assert ew["recall"]["value"] == pytest.approx(float(u[u >= 0.7].sum() / u.sum()), rel=1e-9)
    assert doc["calibrated"]["flagged"] == int((p >= 0.7).sum())
