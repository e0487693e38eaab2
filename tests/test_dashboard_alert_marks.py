"""The Pipeline dashboard marks driftline's own alerts on its time axis. Found with a real Prometheus: while
DriftlineDatabaseUnreachable, DriftlineKafkaUnreachable and DriftlineOffsetReset were firing, the Pipeline
dashboard's 'Firing alerts' annotation (`ALERTS{…, model="$model"}`, shared by every dashboard) returned only the
model's trigger alert: meta-alerts carry no model label, so the dashboard about the pipeline never showed them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
DASHBOARDS = REPO / "deploy" / "grafana" / "dashboards"


def _alert_expr(name: str) -> str:
    (mark,) = [a for a in json.loads((DASHBOARDS / name).read_text())["annotations"]["list"]
               if a.get("name") == "Firing alerts"]
    return mark["expr"]


MODEL_SCOPED = {"DriftlineReferenceOutdated"}
"""Meta-alerts about one model's setup (its reference): they keep `model`, so the model's dashboards mark them."""


def test_meta_alerts_carry_no_model_label() -> None:
    for rule in yaml.safe_load((REPO / "alerts" / "meta.rules.yml").read_text())["groups"][0]["rules"]:
        assert "model" not in rule.get("labels", {}), rule["alert"]
        kept = re.findall(r"\bby \(([^)]*)\)", rule["expr"])
        if rule["alert"] in MODEL_SCOPED:  # every aggregation keeps model: marked where model="$model" is
            assert kept and all("model" in k.split(", ") for k in kept), rule["alert"]
            continue
        for k in kept:
            assert "model" not in k, rule["alert"]


def test_the_pipeline_dashboard_marks_the_meta_alerts() -> None:
    assert re.search(r'\bmodel=""', _alert_expr("driftline-pipeline.json")), _alert_expr("driftline-pipeline.json")


def test_the_model_dashboards_mark_the_models_alerts() -> None:
    for name in ("driftline-overview.json", "driftline-drift.json", "driftline-calibration.json",
                 "driftline-ab.json"):
        assert 'model="$model"' in _alert_expr(name), name
