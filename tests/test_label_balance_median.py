"""The A/B health check's median label delay is the one the arm table shows (one rule for every delay quantile).

Churn tryout: one `driftline ab` screen read 'label delay p50 / p95 43.9 d / 56.3 d' for gbm-v7 and, under health
checks, 'median delay gbm-v7 45.3 d': the table takes the geometric middle of the delay bin holding the median (the
README's rule for every label-delay quantile shown), the health check interpolated inside the bin.
"""

from __future__ import annotations

import json

import numpy as np
import yaml

from driftline import cli

from helpers import outcome, pred

DAY = 86400.0
START = 1_780_272_000.0  # 2026-06-01T00:00:00Z


def test_health_check_median_equals_the_arm_tables_p50(tmp_path, capsys) -> None:
    rng = np.random.default_rng(2)
    lines = []
    for i in range(7 * 24 * 4):
        ts = START + i * 900
        arm = "control" if i % 2 else "gbm-v7"
        y = int(rng.random() < 0.25)
        lines += [pred(f"c{i}", float(rng.random()), ts, variant=arm, model="churn"),
                  outcome(f"c{i}", y, ts + float(rng.uniform(30, 60)) * DAY)]
    lines.sort(key=lambda raw: json.loads(raw)["ts"])
    path = tmp_path / "e.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"model": "churn", "threshold": 0.3, "ab": {
        "design": "split", "control": "control", "arms": {"control": 0.5, "gbm-v7": 0.5}}}))
    base = ["--config", str(cfg), "--db", f"sqlite:///{tmp_path / 'd.db'}"]
    assert cli.main([*base, "replay", str(path), "--json"]) == 0
    capsys.readouterr()
    assert cli.main([*base, "ab", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    medians = doc["comparisons"][0]["label_balance"]["median_delay_s"]
    for arm in ("control", "gbm-v7"):
        p50 = doc["arms"][arm]["label_delay_seconds"]["p50"]
        assert p50 is not None and medians[arm] == p50
