"""The threshold printed next to the counts is the one the flags were made at (README: an event's own `threshold`
overrides the config's): metrics, ab and the weekly report once printed the config's 0.5 beside counts at 0.7."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from driftline.analysis.flag_thresholds import flag_thresholds
from driftline.cli import main
from driftline.core.grids import score_bin
from driftline.core.stats import NEG, POS, BucketStats

sys.path.insert(0, str(Path(__file__).parent))
from helpers import outcome, pred, replayed_db  # noqa: E402

T0 = 1_764_547_200.0  # 2025-12-01 00:00 UTC (ISO week 2025-W49)


def _replay(tmp_path: Path, capsys, thresholds: list[float | None]) -> tuple[str, np.ndarray]:
    rng = np.random.default_rng(8)
    p = np.round(rng.uniform(0.0, 1.0, len(thresholds)), 4)
    lines = []
    for i, (s, t) in enumerate(zip(p, thresholds)):
        lines.append(pred(f"t{i}", s, T0 + i * 60, **({} if t is None else {"threshold": t})))
        if i % 2 == 0:
            lines.append(outcome(f"t{i}", int(rng.random() < s), T0 + i * 60 + 3600))
    url = replayed_db(tmp_path, lines, capsys)
    return url, p


def _json(capsys, *argv: str) -> dict:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_metrics_and_ab_show_the_events_threshold(tmp_path: Path, capsys) -> None:
    url, p = _replay(tmp_path, capsys, [0.7] * 1000)
    doc = _json(capsys, "--db", url, "metrics", "--json")
    assert doc["counts"]["flagged"] == int((p >= 0.7).sum())
    assert doc["threshold"] == 0.7 and doc["config_threshold"] == 0.5
    assert doc["threshold_in_force"]["source"] == "events" and not doc["threshold_in_force"]["mixed"]
    assert main(["--db", url, "metrics"]) == 0
    assert "flagged at score ≥ 0.7: the events' own threshold, not the config's 0.5" in capsys.readouterr().out
    cal = _json(capsys, "--db", url, "calibration", "--json")
    assert cal["threshold"] == cal["early_warning"]["threshold"] == 0.7 and cal["config_threshold"] == 0.5
    ab = _json(capsys, "--db", url, "ab", "--json")
    assert ab["threshold"] == 0.7 and ab["config_threshold"] == 0.5
    assert all(a["threshold_in_force"]["value"] == 0.7 for a in ab["arms"].values())


def test_config_threshold_is_shown_as_before(tmp_path: Path, capsys) -> None:
    url, p = _replay(tmp_path, capsys, [None] * 400)
    doc = _json(capsys, "--db", url, "metrics", "--json")
    assert doc["counts"]["flagged"] == int((p >= 0.5).sum())
    assert doc["threshold"] == 0.5 and doc["threshold_in_force"]["source"] == "config"


def test_a_threshold_changed_mid_window_is_mixed_with_its_set(tmp_path: Path, capsys) -> None:
    """8 hours at the config's 0.5, then the events' own 0.7 (from an hour boundary): no single number is right."""
    url, p = _replay(tmp_path, capsys, [None] * 480 + [0.7] * 520)
    doc = _json(capsys, "--db", url, "metrics", "--json")
    assert doc["counts"]["flagged"] == int((p[:480] >= 0.5).sum() + (p[480:] >= 0.7).sum())
    assert doc["threshold"] is None
    assert doc["threshold_in_force"]["mixed"] and doc["threshold_in_force"]["thresholds"] == [0.5, 0.7]
    assert doc["threshold_in_force"]["range"] == [0.5, 0.7]
    rep = _json(capsys, "--db", url, "report", "--week", "2025-W49", "--out", str(tmp_path / "rep"), "--json")["report"]
    rows = {r["threshold"]: r for r in rep["thresholds"]["rows"]}
    assert rows[0.5]["in_force"] and rows[0.7]["in_force"] and not rows[0.6]["in_force"]
    assert rows[0.5]["mark"] == "in force for part of the week (mixed), config threshold"
    assert "(mixed: 0.5, 0.7; the config's is 0.5) are flagged" in next((tmp_path / "rep").glob("*.md")).read_text()


def test_thresholds_varying_within_a_bucket_are_mixed_without_a_set() -> None:
    """Positives: 1 of {0.55, 0.8} flagged (a cut in (0.55, 0.8]); negatives: 1 of {0.3, 0.4} (a cut in (0.3, 0.4]):
    no single cut. (Counts alone cannot always tell: 2 of 4 flagged in one label state fits some cut.)"""
    p = np.array([0.55, 0.8, 0.3, 0.4])
    b = BucketStats()
    for s, k, y in zip(p, score_bin(p), (POS, POS, NEG, NEG)):
        b.add_prediction(y, s >= (0.7 if y == POS else 0.35), int(k), float(s))
    f = flag_thresholds([b], 0.5)
    assert f.mixed and f.value is None and f.thresholds is None


@pytest.mark.parametrize("cut", [0.62, 0.35, 0.9])
def test_one_cut_is_read_back_from_the_buckets(cut: float) -> None:
    rng = np.random.default_rng(int(cut * 100))
    buckets = []
    for _ in range(5):
        p = np.round(rng.uniform(0.0, 1.0, 300), 4)
        b = BucketStats()
        for s, k, y in zip(p, score_bin(p), rng.integers(0, 3, 300)):
            b.add_prediction(int(y), bool(s >= cut), int(k), float(s))
        buckets.append(b)
    f = flag_thresholds(buckets, 0.5)
    assert not f.mixed and abs(f.value - cut) < 0.005  # the fine grid's resolution near the cut


def test_report_marks_the_threshold_in_force(tmp_path: Path, capsys) -> None:
    url, p = _replay(tmp_path, capsys, [0.7] * 1000)
    out = tmp_path / "rep"
    doc = _json(capsys, "--db", url, "report", "--week", "2025-W49", "--out", str(out), "--json")
    rep = doc["report"]
    rows = {r["threshold"]: r for r in rep["thresholds"]["rows"]}
    assert rows[0.7]["deployed"] and not rows[0.5]["deployed"] and rows[0.5]["configured"]
    assert rows[0.7]["in_force"] and not rows[0.5]["in_force"]
    labelled = p[::2]
    assert rows[0.7]["recall"]["value"] == pytest.approx(rep["headline"]["metrics"]["metrics"]["recall"]["value"])
    assert rep["headline"]["metrics"]["counts"]["flagged"] == int((p >= 0.7).sum()) and len(labelled) == 500
    md = next(out.glob("*.md")).read_text()
    assert "Predictions scoring 0.7 or more (the events' own threshold; the config's is 0.5) are flagged" in md
    assert "| in force (events’ own threshold) |" in md and "config threshold (not in force)" in md


def test_encoded_rows_give_the_decoded_counts() -> None:
    """flags_in_force reads conf and the score histogram straight from the stored bytes (nothing kept decoded)."""
    from driftline.core.window_sum import flag_counts

    rng = np.random.default_rng(3)
    b = BucketStats()
    p = np.round(rng.uniform(0.0, 1.0, 500), 4)
    for s, k, y in zip(p, score_bin(p), rng.integers(0, 3, 500)):
        b.add_prediction(int(y), bool(s >= 0.7), int(k), float(s))
    conf, hist = flag_counts(b.to_bytes())
    assert np.array_equal(conf, b.conf) and np.array_equal(hist, b.hist)
    assert flag_thresholds([(conf, hist)], 0.5) == flag_thresholds([b], 0.5)
