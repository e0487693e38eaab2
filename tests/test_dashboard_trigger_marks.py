"""A model's dashboards mark its firing triggers whichever side pages: Prometheus's rendered rules (ALERTS) or
driftline's own notifier (notify.alertmanager_url set; the rendered rules then leave the triggers out).

On-call tryout (real Prometheus 2.42, driftline run with notify.alertmanager_url and the rules rendered from that
config): RecallBelowTarget paged through Alertmanager, driftline_trigger_firing was 1, and the Overview's 'Firing
alerts' annotation (`ALERTS{alertstate="firing", …, model="$model"}`) returned nothing: no mark on any of the
model's dashboards. Checked with `promtool test rules` evaluating the annotation's own query."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import yaml

from services import require_binary

REPO = Path(__file__).resolve().parents[1]
DASHBOARDS = REPO / "deploy" / "grafana" / "dashboards"
MODEL_DASHBOARDS = ["driftline-overview.json", "driftline-drift.json", "driftline-calibration.json",
                    "driftline-ab.json"]
VARS = {"$cluster": ".*", "$job": "driftline", "$instance": ".*", "$model": "fraud"}


def _mark_query(name: str) -> str:
    (mark,) = [a for a in json.loads((DASHBOARDS / name).read_text())["annotations"]["list"]
               if a.get("name") == "Firing alerts"]
    expr = mark["expr"]
    for var, value in VARS.items():
        expr = expr.replace(var, value)
    return expr


FIRING = ('driftline_trigger_firing{job="driftline", instance="d:9108", model="fraud", severity="critical", '
          'trigger="recall_below_target"}')
PROM_ALERT = ('ALERTS{alertname="RecallBelowTarget", alertstate="firing", job="driftline", model="fraud", '
              'model_version="all", variant="all", window="7d", severity="critical", trigger="recall_below_target"}')


def _promtool_eval(tmp_path: Path, expr: str, series: list[dict[str, str]], expected: list[dict]) -> None:
    doc = {"rule_files": [], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": series,
        "promql_expr_test": [{"expr": expr, "eval_time": "5m", "exp_samples": expected}]}]}
    path = tmp_path / "marks.test.yml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    res = subprocess.run([require_binary("promtool"), "test", "rules", str(path)], capture_output=True, text=True,
                         cwd=tmp_path, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr


def test_a_trigger_firing_in_driftlines_evaluator_is_marked_without_a_prometheus_alert(tmp_path: Path) -> None:
    """Notifier mode: no ALERTS series, driftline_trigger_firing 1 → one mark, named by the trigger."""
    for name in MODEL_DASHBOARDS:
        _promtool_eval(tmp_path, _mark_query(name), [
            {"series": FIRING, "values": "1x10"},
            {"series": FIRING.replace("recall_below_target", "fpr_above_target").replace("critical", "warning"),
             "values": "0x10"},
        ], [{"labels": '{alertname="recall_below_target", job="driftline", model="fraud", severity="critical", '
                       'trigger="recall_below_target"}', "value": 1}])


def test_a_trigger_alerting_in_prometheus_is_marked_once(tmp_path: Path) -> None:
    """Rule mode: ALERTS and driftline_trigger_firing both say firing → one mark, Prometheus's alert."""
    for name in MODEL_DASHBOARDS:
        _promtool_eval(tmp_path, _mark_query(name), [
            {"series": FIRING, "values": "1x10"},
            {"series": PROM_ALERT, "values": "1x10"},
        ], [{"labels": PROM_ALERT, "value": 1}])


def test_the_pipeline_dashboard_marks_no_trigger() -> None:
    """The Pipeline dashboard marks driftline's meta-alerts only (tests/test_dashboard_alert_marks.py)."""
    assert "driftline_trigger_firing" not in _mark_query("driftline-pipeline.json")
