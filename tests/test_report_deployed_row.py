"""The report's threshold trade-off has a row for the deployed threshold when it is not one of 0.1 … 0.9.

Churn tryout: flagged at score ≥ 0.35, the weekly report's trade-off table listed 0.1 … 0.9 (the fraud example's
0.5 is one of them) and no row was marked deployed, so the threshold in use could not be set against the others;
its thresholds were also printed with one decimal ("%.1f"), so a row at 0.35 would have read "0.3" or "0.4". The
row is computed from the week's exact confusion counts, so it equals the headline.
"""

from __future__ import annotations

import json

import numpy as np
import yaml

from driftline import cli

from helpers import outcome, pred

START = 1_780_272_000.0  # 2026-06-01T00:00:00Z (a Monday): ISO week 2026-W23


def _replay(tmp_path, threshold: float) -> list[str]:
    rng = np.random.default_rng(5)
    lines = []
    for i in range(7 * 24 * 6):  # one week, a prediction every 10 minutes
        ts = START + i * 600
        y = int(rng.random() < 0.25)
        score = float(np.clip(rng.normal(0.45 if y else 0.25, 0.15), 0.0, 1.0))
        lines += [pred(f"c{i}", score, ts, model="churn"), outcome(f"c{i}", y, ts + 300)]
    path = tmp_path / "e.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"model": "churn", "threshold": threshold, "costs": {
        "currency": "USD", "missed_positive": 300, "review_per_flag": 20, "monthly_volume": 30000}}))
    base = ["--config", str(cfg), "--db", f"sqlite:///{tmp_path / 'd.db'}"]
    assert cli.main([*base, "replay", str(path), "--json"]) == 0
    return base


def test_a_threshold_between_the_tabulated_ones_has_its_own_exact_row(tmp_path, capsys) -> None:
    base = _replay(tmp_path, 0.35)
    capsys.readouterr()
    out = tmp_path / "r"
    assert cli.main([*base, "report", "--week", "2026-W23", "--out", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)["report"]
    rows = doc["thresholds"]["rows"]
    assert [r["threshold"] for r in rows] == [0.1, 0.2, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    row = rows[3]
    assert row["in_force"] and row["mark"] == "deployed" and row["grid_edge"] is None
    headline = doc["headline"]["metrics"]
    c = headline["counts"]
    assert row["counts"] == {"tp": c["tp"], "fp": c["fp"], "fn": c["fn"], "tn": c["tn"]}
    assert row["recall"]["value"] == headline["metrics"]["recall"]["value"]
    assert [r for r in rows if r["in_force"]] == [row]
    md = (out / "report-churn-2026-W23.md").read_text()
    assert "\n| 0.35 | " in md and "| deployed" in md.split("\n| 0.35 | ")[1].split("\n")[0]
    html = (out / "report-churn-2026-W23.html").read_text()
    assert "<td>0.35</td>" in html


def test_a_tabulated_threshold_adds_no_row(tmp_path, capsys) -> None:
    base = _replay(tmp_path, 0.3)
    capsys.readouterr()
    assert cli.main([*base, "report", "--week", "2026-W23", "--out", str(tmp_path / "r"), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["report"]["thresholds"]["rows"]
    assert [r["threshold"] for r in rows] == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    assert [r["threshold"] for r in rows if r["in_force"]] == [0.3]
