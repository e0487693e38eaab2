"""Drift names the categories the reference never saw, not only their share in `(other)`.

Churn tryout: a new plan `unlimited-5g` appeared a week after the reference and took 20 % of the window; `drift`
showed plan drifted with `(other)` 0.199 and `unseen_share` 0.199, and no output said which value it was.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from driftline import cli
from driftline.analysis.profiles import ProfileSettings, build_profile, unseen_values
from driftline.core.feature_hists import OTHER as CATEGORY_OVERFLOW
from driftline.core.stats import FeatureHist

from helpers import churn_with_reference, pred

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
    base = churn_with_reference(tmp_path, lines, {"model": "churn", "threshold": 0.3,
                                                  "features": {"plan": "categorical"}})
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


def test_high_cardinality_unseen_share_is_said_to_be_an_upper_bound(tmp_path, capsys) -> None:
    """A 5,000-value id feature, every window value also in the reference, read "0.598 of the window's values were
    never seen in the reference" (raw: 0.009): the reference remembers only its 2,000 most frequent categories."""
    lines, ref_vals, cur_vals = [], set(), []
    for i in range(2 * 7 * 24 * 20):  # two weeks, a prediction every 3 minutes; 3,000 ids cycled
        ts, v = START + i * 180, f"v{i % 3000:04d}"
        (ref_vals.add(v) if ts < START + 7 * DAY else cur_vals.append(v))
        lines.append(pred(f"c{i}", 0.1, ts, model="churn", features={"user": v}))
    base = churn_with_reference(tmp_path, lines, {"model": "churn", "features": {"user": "categorical"}})
    capsys.readouterr()
    assert cli.main([*base, "drift", "--json"]) == 0
    user = json.loads(capsys.readouterr().out)["features"][0]
    raw_unseen = sum(v not in ref_vals for v in cur_vals) / len(cur_vals)
    assert raw_unseen == 0 and len(ref_vals) == 3000
    # v2000…v2999 are outside the 2,000 remembered (ties by name): 1,000 of the window's 3,360 values
    assert user["unseen_share"] == pytest.approx(1000 / 3360) and user["unseen_share"] >= raw_unseen
    assert user["unseen_exact"] is False and user["unseen_bound"] == {"remembered": 2000, "reference_distinct": 3000}
    assert cli.main([*base, "drift"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "new values: user: at most 0.298 of the window's values were never seen in the reference: that share is " \
           "not among its 2,000 most frequent values (of 3,000 distinct; rarer ones are not remembered, so some of " \
           "these were seen): v2000 (1)," in text
    assert "0.298 of the window's values were never seen" not in text.replace("at most 0.298", "")
    out = tmp_path / "reports"
    assert cli.main([*base, "report", "--week", "2026-W24", "--out", str(out)]) == 0
    md = (out / "report-churn-2026-W24.md").read_text()
    assert "**New values** of user (at most 0.298 of the week's values never seen in the reference: that share is " \
           "not among its 2,000 most frequent values (of 3,000 distinct;" in md


def test_exact_unseen_share_when_the_reference_remembers_every_category() -> None:
    """Below `max_seen` distinct categories the share is exact: `unseen_exact` true, no bound."""
    from driftline.analysis.drift import categorical_drift
    prof = build_profile({"plan": _cats({"basic": 50, "standard": 30})}).feature("plan")
    f = categorical_drift(prof, _cats({"basic": 10, "promo": 10})).to_json()
    assert f["unseen_share"] == 0.5 and f["unseen_exact"] is True and f["unseen_bound"] is None


def test_a_feature_that_appeared_after_the_reference_is_named_with_its_counts(tmp_path, capsys) -> None:
    """A field present in every prediction of the window but absent from the reference read only "not in the
    reference (not compared): late_feat" (no count), and the weekly report's drift section did not name it."""
    lines, window_n, carried = [], 0, 0
    for i in range(14 * 24 * 4):  # two weeks, a prediction every 15 minutes; `late` from the middle of week two
        ts = START + i * 900
        feats: dict[str, object] = {"plan": "basic"}
        if ts >= START + 10 * DAY:
            feats["late"] = float(i % 7)
        if ts >= START + 7 * DAY:
            window_n, carried = window_n + 1, carried + ("late" in feats)
        lines.append(pred(f"c{i}", 0.1, ts, model="churn", features=feats))
    base = churn_with_reference(tmp_path, lines)
    capsys.readouterr()
    assert cli.main([*base, "drift", "--model", "churn", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["untracked"] == ["late"] and doc["window"]["n"] == window_n == 672 and carried == 384
    assert doc["untracked_values"] == [{"feature": "late", "values": 384, "share": pytest.approx(384 / 672)}]
    assert cli.main([*base, "drift", "--model", "churn"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "not in the reference (not compared): late (384 values, 0.571 of the window's predictions)" in text
    out = tmp_path / "reports"
    assert cli.main([*base, "report", "--model", "churn", "--week", "2026-W24", "--out", str(out)]) == 0
    md = (out / "report-churn-2026-W24.md").read_text()
    html = (out / "report-churn-2026-W24.html").read_text()
    line = "feature of this week the reference does not have: late (384 values, 0.571 of the week's predictions)"
    assert f"**Not compared**: 1 {line}. Set a new reference to monitor it." in md
    assert '<p class="banner warn" id="untracked"><b>Not compared:</b> 1 ' + line in html


def test_reference_show_says_how_much_a_high_cardinality_feature_keeps(tmp_path, capsys) -> None:
    """`reference show` listed a 5,000-value id's 20 kept categories and `(other)` with no word that (other) held
    0.990 of its values (raw: 4,954 distinct, the top 20 holding 0.010)."""
    lines, ref_vals = [], []
    for i in range(7 * 24 * 4):  # one week, a prediction every 15 minutes; 30 ids, the first 12 twice as often
        v = f"v{(i % 42) if i % 42 < 30 else (i % 42) - 30:02d}"
        ref_vals.append(v)
        lines.append(pred(f"c{i}", 0.1, START + i * 900, model="churn", features={"user": v}))
    base = churn_with_reference(tmp_path, lines)
    capsys.readouterr()
    assert cli.main([*base, "reference", "show", "--model", "churn"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    from collections import Counter
    top20 = sum(sorted(Counter(ref_vals).values(), reverse=True)[:20]) / len(ref_vals)
    assert len(set(ref_vals)) == 30
    assert (f"high cardinality: 30 distinct values; the 20 kept (drift.top_k) hold {top20:.3f} of the predictions "
            f"and (other) {1 - top20:.3f}") in text and top20 == pytest.approx(32 / 42, abs=0.01)
    assert "mostly compare (other)" not in text  # (other) holds 0.238: said only when it holds most values
