"""User text in rendered alert annotations stays text (tryout: a trigger description "Check {{ broken …" gave a
rules file promtool refused — function "broken" not defined — so Prometheus would not load any rule, while
`alerts render` exited 0; "{{ $value }}" in a description was expanded). Checked by the real promtool."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from driftline.config import from_dict
from driftline.triggers.rules import literal, render_rules, to_yaml

from services import require_binary
from test_triggers import _promtool_test

TEXT = 'Check {{ broken and {{ $value }} and }} as written "quoted" {{'
GENERATED = (" Recall of model fraud (version all, variant all) over the last 7d is 0.500, under the agreed line of "
             "0.70 (95% interval n/a to n/a, n = 40 labelled positives).")
SEL = 'model="fraud", model_version="all", variant="all", window="7d"'


def _config():
    return from_dict({"model": "fraud", "triggers": [
        {"name": "recall_low", "metric": "recall", "op": "<", "value": 0.7, "window": "7d", "min_n": 1,
         "for": "1m", "description": TEXT,
         "runbook_url": "https://runbooks.example/{{x}}#recall"},
        {"name": "dead_letters", "metric": "dead_letter_rate", "op": ">", "value": 0.01, "window": "1h",
         "description": TEXT}]})


def test_literal_writes_each_delimiter_as_an_action_printing_it() -> None:
    assert literal("a {{ b }} c") == 'a {{ "{{" }} b {{ "}}" }} c'
    assert literal("no braces {x}") == "no braces {x}"


def _fires(tmp_path: Path, config: Any, alert: str, trigger: str, series: dict[str, str],
           annotations: dict[str, str]) -> subprocess.CompletedProcess:
    """promtool test rules: the rendered `alert` fires at 5 m on `series` (name → values) with these annotations."""
    labels = {"severity": "warning", "trigger": trigger, "model": "fraud", "model_version": "all",
              "variant": "all", "window": "7d"}
    test = {"interval": "1m", "alert_rule_test": [{"eval_time": "5m", "alertname": alert, "exp_alerts": [
        {"exp_labels": labels, "exp_annotations": annotations}]}]}
    body = json.dumps(test)[:-1] + ', "input_series": [' + ", ".join(
        json.dumps({"series": f"{name}{{{SEL}}}", "values": values}) for name, values in series.items()) + "]}"
    return _promtool_test(tmp_path, to_yaml(render_rules(config)),
                          f"rule_files: [r.yml]\nevaluation_interval: 1m\ntests: [{body}]\n")


def test_rendered_rules_with_template_text_in_descriptions_pass_promtool(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yml"
    rules.write_text(to_yaml(render_rules(_config())))
    res = subprocess.run([require_binary("promtool"), "check", "rules", str(rules)], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    res = _fires(tmp_path, _config(), "RecallLow", "recall_low",
                 {"driftline_recall_ratio": "0.5x10", "driftline_window_positives": "40x10"},
                 {"summary": "Recall of fraud is 0.500 over 7d (line < 0.70)", "description": TEXT + GENERATED,
                  "runbook_url": "https://runbooks.example/{{x}}#recall"})
    assert res.returncode == 0, res.stdout + res.stderr


def test_a_line_with_more_decimals_shows_the_value_with_as_many(tmp_path: Path) -> None:
    """Tryout: a precision line of 0.0005 rendered "Precision of fraud is 0.000 (line <= 0.0005)"."""
    config = from_dict({"model": "fraud", "triggers": [
        {"name": "precision_low", "metric": "precision", "op": "<=", "value": 0.0005, "window": "7d", "min_n": 1,
         "for": "1m"}]})
    res = _fires(tmp_path, config, "PrecisionLow", "precision_low",
                 {"driftline_precision_ratio": "0.0004x10", "driftline_window_true_positives": "1x10",
                  "driftline_window_false_positives": "2499x10"},
                 {"summary": "Precision of fraud is 0.0004 over 7d (line <= 0.0005)",
                  "description": "Precision of model fraud (version all, variant all) over the last 7d is 0.0004, "
                                 "under the agreed line of 0.0005 (95% interval n/a to n/a, n = 2500 flagged labelled "
                                 "predictions).",
                  "runbook_url": "https://github.com/driftline/driftline/blob/main/docs/RUNBOOKS.md#precisionlow"})
    assert res.returncode == 0, res.stdout + res.stderr
