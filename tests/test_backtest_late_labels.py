"""A backtest (`alerts evaluate --at T`) reads the labels known now; it says how many of them came after T.

Churn tryout: labels arrive 30–60 days after the prediction, and `alerts evaluate --at 2026-06-15` on a replayed
history fired a recall alert over 1,460 labels that had all arrived after 2026-06-15 (a live evaluation then held
none), while the README said a backtest equals what a live evaluation at that time saw. Buckets keep no arrival
time per count, so the readout bounds it from the per-bucket label-delay histograms and says so.
"""

from __future__ import annotations

import json

import numpy as np
import yaml

from driftline import cli
from driftline.analysis.label_arrival import late_labels
from driftline.core.grids import N_DELAY_BINS, delay_bin

from helpers import outcome, pred

DAY = 86400.0
START = 1_780_272_000.0  # 2026-06-01T00:00:00Z


def _hist(delays_s: list[float]) -> np.ndarray:
    h = np.zeros(N_DELAY_BINS, dtype=np.int64)
    np.add.at(h, delay_bin(np.asarray(delays_s)), 1)
    return h


def test_late_labels_bounds_arrival_by_the_delay_bins() -> None:
    # a 1 h bucket at START: labels 40 d, 2 h and 30 s after prediction
    buckets = [(START, 3600.0, _hist([40 * DAY, 2 * 3600.0, 30.0]))]
    at = START + 10 * DAY  # the 40-day label surely came after, the others surely before
    assert late_labels(buckets, at).to_json() == {"labels": 3, "surely_after": 1, "maybe_after": 1}
    # at START + 2.5 h: a 2 h label of a prediction late in the bucket may come after it, never surely
    late = late_labels(buckets, START + 2.5 * 3600)
    assert (late.surely_after, late.maybe_after) == (1, 2)
    assert late_labels(buckets, START + 100 * DAY).maybe_after == 0  # all arrived long before


def _churn_like(tmp_path) -> list[str]:
    """Two weeks of predictions, each labelled 35 days later (the churn setting), a recall trigger on 7 days."""
    lines = []
    for i in range(14 * 24):
        ts = START + i * 3600
        pid = f"c{i}"
        lines += [pred(pid, 0.2 + 0.5 * (i % 3 == 0), ts, model="churn"), outcome(pid, i % 2, ts + 35 * DAY)]
    lines.sort(key=lambda raw: json.loads(raw)["ts"])
    path = tmp_path / "e.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"model": "churn", "threshold": 0.3, "triggers": [
        {"name": "recall_low", "metric": "recall", "op": "<", "value": 0.9, "window": "7d", "min_n": 30},
        {"name": "alerts_high", "metric": "alert_rate", "op": ">", "value": 0.99, "window": "7d", "min_n": 1}]}))
    base = ["--config", str(cfg), "--db", f"sqlite:///{tmp_path / 'd.db'}"]
    assert cli.main([*base, "replay", str(path), "--json"]) == 0
    return base


def test_alerts_evaluate_at_says_the_labels_came_after_it(tmp_path, capsys) -> None:
    base = _churn_like(tmp_path)
    capsys.readouterr()
    at = "2026-06-15T00:00:00Z"  # the second week's 168 predictions, labelled 2026-07-13 … 2026-07-20
    assert cli.main([*base, "alerts", "evaluate", "--at", at, "--json", "--no-notify", "--dry-run"]) == 0
    doc = json.loads(capsys.readouterr().out)
    states = {e["trigger"]: e for e in doc["evaluations"]} if "evaluations" in doc else None
    assert doc["late_labels"] == [{"window": doc["late_labels"][0]["window"], "triggers": ["recall_low"],
                                   "labels": 168, "surely_after": 168, "maybe_after": 168,
                                   "note": doc["late_labels"][0]["note"]}], states
    assert doc["late_labels"][0]["window"]["end"] == at
    note = doc["late_labels"][0]["note"]
    assert "at least 168 of this window's 168 labels arrived after it" in note
    assert cli.main([*base, "alerts", "evaluate", "--at", at, "--no-notify", "--dry-run"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "recall_low (7d window): labels as known now, not at --at 2026-06-15T00:00:00Z" in text


def test_no_note_when_every_label_had_arrived(tmp_path, capsys) -> None:
    base = _churn_like(tmp_path)
    capsys.readouterr()
    # the window ending 2026-06-15, judged as of 2026-07-25 would see them all; a window ending 2026-07-25
    # holds no predictions, so nothing is said; and without --at (now) no backtest note is made
    assert cli.main([*base, "alerts", "evaluate", "--at", "2026-07-25", "--json", "--no-notify", "--dry-run"]) == 0
    assert json.loads(capsys.readouterr().out)["late_labels"] == []
    assert cli.main([*base, "alerts", "evaluate", "--json", "--no-notify", "--dry-run"]) == 0
    assert json.loads(capsys.readouterr().out)["late_labels"] == []


def test_no_note_once_at_is_past_the_newest_outcome(tmp_path, capsys) -> None:
    """Verify tryout: `alerts evaluate --at` just after the end of a replayed history said "up to … labels may have
    arrived after it" (the delay bins of the newest buckets reach past it) though every outcome stored came before."""
    lines = []
    for i in range(7 * 24):  # hourly predictions over a week, each labelled 2 h later
        ts = START + i * 3600 + 1800
        lines += [pred(f"h{i}", 0.2 + 0.5 * (i % 3 == 0), ts, model="churn"), outcome(f"h{i}", i % 2, ts + 7200)]
    lines.sort(key=lambda raw: json.loads(raw)["ts"])
    (tmp_path / "e.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"model": "churn", "threshold": 0.3, "triggers": [
        {"name": "recall_low", "metric": "recall", "op": "<", "value": 0.9, "window": "7d", "min_n": 30}]}))
    base = ["--config", str(cfg), "--db", f"sqlite:///{tmp_path / 'd.db'}"]
    assert cli.main([*base, "replay", str(tmp_path / "e.jsonl"), "--json"]) == 0
    capsys.readouterr()
    newest = START + (7 * 24 - 1) * 3600 + 1800 + 7200  # the last outcome: 2026-06-08T02:30:00Z
    after = newest + 1800  # 03:00, the window [06-01T03:00, 06-08T03:00) holds the week's last predictions
    assert late_labels([(START + (7 * 24 - 1) * 3600, 3600.0, _hist([7200.0]))], after).maybe_after == 1  # bins alone
    assert cli.main([*base, "alerts", "evaluate", "--at", str(after), "--json", "--no-notify", "--dry-run"]) == 0
    assert json.loads(capsys.readouterr().out)["late_labels"] == []
    # before the newest outcome the note stays: the last labels did come after 2026-06-08T01:00:00Z
    assert cli.main([*base, "alerts", "evaluate", "--at", str(newest - 5400), "--json", "--no-notify",
                     "--dry-run"]) == 0
    late = json.loads(capsys.readouterr().out)["late_labels"]
    assert late and late[0]["surely_after"] >= 1
