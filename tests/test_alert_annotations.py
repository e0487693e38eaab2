"""Rendered alert annotations write numbers as the CLI does (user tryout: the page said 'Recall of fraud is
45.64% ... (line 70%)' where `driftline alerts` and `driftline metrics` said '0.456' and 'line < 0.70')."""

from __future__ import annotations

import re

import pytest

from driftline.config import from_dict
from driftline.metric_names import fmt_line
from driftline.triggers.rules import render_rules
from driftline.triggers.runner import compile_rules

TRIGGERS = [
    {"name": "recall_low", "metric": "recall", "op": "<", "value": 0.7, "severity": "critical"},
    {"name": "fpr_high", "metric": "fpr", "op": ">", "value": 0.085, "severity": "warning", "mode": "confident",
     "hysteresis": 0.01},
    {"name": "auc_low", "metric": "roc_auc", "op": "<", "value": 0.8, "severity": "warning", "mode": "confident"},
    {"name": "dead_high", "metric": "dead_letter_rate", "op": ">", "value": 0.01, "severity": "warning"},
    {"name": "psi_high", "metric": "psi", "op": ">", "value": 0.25, "severity": "warning"},
    {"name": "brier_high", "metric": "brier", "op": ">", "value": 0.1, "severity": "warning"},
]


@pytest.fixture(scope="module")
def alerts() -> dict[str, dict[str, str]]:
    config = from_dict({"triggers": TRIGGERS})
    rules = {r.name: r for r in compile_rules(config.triggers)}
    out = {}
    for a in render_rules(config).alerts:
        name = a.labels["trigger"]
        out[name] = {**a.annotations, "line": f"(line {rules[name].op} {fmt_line(rules[name])})"}
    return out


def test_no_percentages_in_annotations(alerts) -> None:
    for name, ann in alerts.items():
        text = ann["summary"] + " " + ann["description"]
        assert "humanizePercentage" not in text, name
        assert not re.findall(r"\d%(?! interval)(?! bound)", text.replace("95% ", "")), (name, text)


def test_values_are_proportions_and_statistics_with_the_cli_places(alerts) -> None:
    for name in ("recall_low", "fpr_high", "auc_low", "dead_high"):
        assert '{{ $value | printf "%.3f" }}' in alerts[name]["summary"], name
    for name in ("psi_high", "brier_high"):
        assert '{{ $value | printf "%.4f" }}' in alerts[name]["summary"], name
    assert alerts["fpr_high"]["description"].count('| printf "%.3f" }}') == 3  # value and both interval bounds


def test_the_summary_states_the_line_as_the_cli_does(alerts) -> None:
    assert alerts["recall_low"]["line"] == "(line < 0.70)" and alerts["fpr_high"]["line"] == "(line > 0.085)"
    for name, ann in alerts.items():
        assert ann["summary"].endswith(ann["line"]), (name, ann["summary"])
    assert "until back below 0.075." in alerts["fpr_high"]["description"]


def test_every_series_an_annotation_queries_is_the_alerts_own_deployment(alerts) -> None:
    """Each `query` of a description selects the alert's cluster and job (on-call tryout with a real Prometheus
    scraping two deployments of model fraud: one page quoted the other's interval and n; alerts/tests/
    triggers.test.yml pins the expanded text)."""
    seen = 0
    for name, ann in alerts.items():
        for sel, args in re.findall(r'printf "[a-z_]+\{([^}]*)\}[^"]*" ([^|]*)\| query', ann["description"]):
            seen += 1
            assert sel.startswith("cluster=%q,job=%q,"), (name, sel)
            assert args.startswith('(index $labels "cluster") (index $labels "job") '), (name, args)
    assert seen >= 7  # recall and FPR: two bounds and n each; ROC AUC: two bounds
