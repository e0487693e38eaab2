"""Drift names the categories the reference never saw, not only their share in `(other)`.

Churn tryout: a new plan `unlimited-5g` appeared a week after the reference and took 20 % of the window; `drift`
showed plan drifted with `(other)` 0.199 and `unseen_share` 0.199, and no output said which value it was.
"""

from __future__ import annotations

import json

import numpy as np
import yaml

from driftline import cli
from driftline.analysis.profiles import ProfileSettings, build_profile, unseen_values
from driftline.core.feature_hists import OTHER as CATEGORY_OVERFLOW
from driftline.core.stats import FeatureHist

from helpers import pred

DAY = 86400.0
START = 1_780_272_000.0  # 2026-06-01T00:00:00Z


def _cats(counts: dict[str, int]) -> FeatureHist:
    return FeatureHist({}, dict(counts), 0)


def test_unseen_values_are_the_new_categories_most_frequent_first() -> None:
    ref = _cats({"basic": 50, "standard": 30, "legacy": 2})
    prof = build_profile({"plan": ref}, settings=ProfileSettings(top_k=2)).feature("plan")
    cur = _cats({"basic": 10, "legacy": 1, "unlimited-5g": 7, "promo": 7, "x": 1, "y": 1, "z": 1, "w": 1,
                 CATEGORY_OVERFLOW: 40})
    # legacy was seen (in `other`), the overflow bucket of many categories is no value; ties by name; five shown
    assert unseen_values(prof, cur) == (("promo", 7), ("unlimited-5g", 7), ("w", 1), ("x", 1), ("y", 1))
    assert unseen_values(prof, _cats({"basic": 3})) == ()


def test_drift_names_a_new_category(tmp_path, capsys) -> None:
    rng = np.random.default_rng(0)
    lines = []
    for i in range(14 * 24 * 4):  # two weeks, a prediction every 15 minutes
        ts = START + i * 900
        plans = ["basic", "standard"] + (["unlimited-5g"] if ts >= START + 7 * DAY else [])
        plan = str(rng.choice(plans))
        lines.append(pred(f"c{i}", float(rng.random()), ts, model="churn", features={"plan": plan}))
    path = tmp_path / "e.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"model": "churn", "threshold": 0.3, "features": {"plan": "categorical"}}))
    base = ["--config", str(cfg), "--db", f"sqlite:///{tmp_path / 'd.db'}"]
    assert cli.main([*base, "replay", str(path), "--json"]) == 0
    assert cli.main([*base, "reference", "set", "--from", "2026-06-01", "--to", "2026-06-08"]) == 0
    capsys.readouterr()
    assert cli.main([*base, "drift", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)["features"][0]
    new = plan["unseen_values"]
    assert [v["value"] for v in new] == ["unlimited-5g"] and new[0]["count"] > 150  # a third of the last week's 672
    assert cli.main([*base, "drift"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"new values: plan: {plan['unseen_share']:.3f} of the window's values were never seen in the reference: " \
           f"unlimited-5g ({new[0]['count']:,})" in text
    out = tmp_path / "reports"
    assert cli.main([*base, "report", "--week", "2026-W24", "--out", str(out)]) == 0
    md = (out / "report-churn-2026-W24.md").read_text()
    html = (out / "report-churn-2026-W24.html").read_text()
    assert "**New values** of plan (never seen in the reference; " in md and "unlimited-5g (" in md
    assert '<p class="new-values"><b>New values</b> of plan' in html
