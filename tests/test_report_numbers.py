"""Issue 17 §3 and the cost-optimal threshold: the report formats every number through numbers.py (the terminal's
rule), and never recommends a cost-optimal threshold that miscalibrated scores or the week's costs contradict."""

from __future__ import annotations

import re
from typing import Any

from rich.console import Console

from driftline.commands.readout_render import _vs_table
from driftline.reports import render
from driftline.reports.business import judge_cost_optimal
from driftline.reports.summary import cost_optimal_sentence, kpi_sentence

M = "\u2212"


def test_report_filters_follow_the_terminal_rule() -> None:
    assert render.pvalue(0.0871) == "0.087" and render.pvalue(0.855) == "0.85"  # was "0.0871" / "0.8550"
    assert render.money(5909, "EUR", 4372, 7447) == "€5,909 [€4,372, €7,447]"  # was "€5,909 [4372, 7447]"
    assert render.money(-2134.16, "EUR", -4109.96, -158.35, signed=True) == f"{M}€2,134 [{M}€4,110, {M}€158]"
    assert render.money(0.002, "EUR") == "€0.0020"  # the model cost per prediction, was "0.002 EUR" next to "€"
    assert render.money(-0.3, "EUR") == f"{M}€0.30"
    assert render.ratio(487, 3754) == "487/3,754"
    assert render.signed(-0.0002) == "0.000" and render.signed(-0.012) == f"{M}0.012"
    assert render.interval(-0.018, 0.13) == f"[{M}0.018, 0.130]"
    assert render.stat(0.14834) == "0.1483"
    assert render.headline_value({"metric": "ece", "value": 0.14834}) == "0.1483"
    assert render.headline_value({"metric": "fpr", "value": 0.046, "low": 0.043, "high": 0.048, "n": 24049}) \
        == "0.046 [0.043, 0.048] n=24,049"


def test_kpi_sentence_uses_one_currency_style_and_separators() -> None:
    v = {"savings": -49473.2, "savings_low": -87168.0, "savings_high": -11314.0, "review_hours_saved": 1753.4,
         "extra_caught": -180.2, "complaints_avoided": 217.0}
    text = kpi_sentence(v, "rules engine", {"review_hours": "analyst hours", "positives": "frauds"},
                        lambda x: render.money(x, "EUR"))
    assert text == ("Against the rules engine, the model costs €49,473 more a month (range €11,314 to €87,168 more), "
                    "1,753 analyst hours fewer, 180 fewer frauds caught and 217 fewer complaints.")


def test_calibration_error_column_is_signed_and_never_minus_zero() -> None:
    """`calibration`'s estimated-vs-realised table: the error was '0.565' (unsigned) or '-0.000'."""
    console = Console(width=120, record=True, color_system=None)
    rows = [{"metric": m, "estimated": {"value": 0.5, "low": 0.4, "high": 0.6}, "within_interval": True,
             "realised": {"value": 0.5, "low": 0.4, "high": 0.6, "n": 100, "indicative": False}, "error": e}
            for m, e in (("recall", 0.565), ("fpr", -0.012), ("precision", -0.0001))]
    _vs_table(console, "estimated", rows, "t")
    out = console.export_text()
    assert "+0.565" in out and f"{M}0.012" in out and "-0.000" not in out and f"{M}0.000" not in out


def _thresholds(optimal_total: float, deployed_total: float) -> dict[str, Any]:
    monthly = {"review_hours": 16251.0, "total": optimal_total}
    return {"cost_optimal": {"threshold": 0.0123456, "c_fp": 5.0, "c_fn": 400.0},
            "cost_optimal_row": {"recall": {"value": 1.0, "low": 0.993, "high": 1.0, "n": 550}, "monthly": monthly},
            "deployed_row": {"monthly": {"review_hours": 100.0, "total": deployed_total}}}


def _calibration(beyond: bool | None) -> dict[str, Any]:
    if beyond is None:
        return {"available": False}
    return {"available": True, "document": {"calibration": {"noise_floor": {
        "width": {"ece": 0.1483, "p95": 0.0073, "beyond_floor": beyond}}}}}


def _sentence(t: dict[str, Any], cal: dict[str, Any]) -> str:
    t["cost_optimal"]["judgement"] = judge_cost_optimal(t, cal)
    return cost_optimal_sentence(t, 0.5, "analyst hours", lambda v: render.money(v, "EUR"))


def test_cost_optimal_threshold_not_usable_when_scores_are_miscalibrated() -> None:
    t = _thresholds(optimal_total=100_000.0, deployed_total=200_000.0)
    text = _sentence(t, _calibration(True))
    assert t["cost_optimal"]["judgement"]["usable"] is False
    assert "not usable (scores miscalibrated, ECE 0.1483 vs noise floor 0.0073" in text
    assert "Do not move the threshold to it." in text
    assert text.startswith("Cost-optimal threshold for calibrated scores: C_FP / (C_FP + C_FN) = €5.00 / "
                           "(€5.00 + €400) = 0.0123")


def test_cost_optimal_threshold_that_costs_more_than_the_deployed_one_says_so() -> None:
    t = _thresholds(optimal_total=487_740.0, deployed_total=200_000.0)
    text = _sentence(t, _calibration(False))
    assert "it costs €287,740 more a month than the deployed threshold 0.5" in text and "not usable" in text


def test_cost_optimal_threshold_recommended_only_when_calibrated_and_cheaper() -> None:
    t = _thresholds(optimal_total=150_000.0, deployed_total=200_000.0)
    text = _sentence(t, _calibration(False))
    assert t["cost_optimal"]["judgement"]["usable"] is True
    assert "not usable" not in text and re.search(r"total €150,000 a month\)\.$", text)


def test_counts_and_differences_of_counts_use_the_minus_sign() -> None:
    """User tryout: the HTML 'model − baseline' column read '-4,516', '-180' (a hyphen) next to '−€22,580'."""
    assert render.count(-4516.4) == f"{M}4,516" and render.count(-180) == f"{M}180"
    assert render.count(-0.3) == "0" and render.count(1200.2, signed=True) == "+1,200"  # never '-0'
    assert render.count(None) == "—" and render.count(13962) == "13,962"
