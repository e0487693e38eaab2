"""The Overview's 'Labelled positives in window' turns green at the configured minimum n, not at a constant 30
(the stat's thresholds were a constant 30: with `min_n: 200` on the recall trigger it read green from 30 positives
while the trigger still reported insufficient_data). The exporter publishes each trigger's min_n (driftline_trigger_min_n) and the stat takes its
threshold from it (Grafana config-from-query), checked with the real promtool against exported series."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import yaml
from prometheus_client import CollectorRegistry

from driftline.config import from_dict
from driftline.exporter.collector import SnapshotCollector
from driftline.storage.store import Store

from services import require_binary

REPO = Path(__file__).resolve().parents[1]
OVERVIEW = REPO / "deploy" / "grafana" / "dashboards" / "driftline-overview.json"
TRIGGERS = [{"name": "recall_floor", "metric": "recall", "op": "<", "value": 0.7, "min_n": 200},
            {"name": "recall_warn", "metric": "recall", "op": "<", "value": 0.8, "min_n": 50},
            {"name": "fpr_ceiling", "metric": "fpr", "op": ">", "value": 0.1, "min_n": 500}]


def test_the_exporter_publishes_each_triggers_configured_min_n(tmp_path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'm.db'}")
    store.migrate()
    try:
        reg = CollectorRegistry()
        reg.register(SnapshotCollector(store, from_dict({"model": "fraud", "triggers": TRIGGERS})))
        for t in TRIGGERS:
            labels = {"model": "fraud", "trigger": t["name"], "severity": "warning", "metric": t["metric"]}
            assert reg.get_sample_value("driftline_trigger_min_n", labels) == t["min_n"]
    finally:
        store.close()


def _stat() -> dict:
    (p,) = [p for p in json.loads(OVERVIEW.read_text())["panels"] if p["title"] == "Labelled positives in window"]
    return p


def test_the_positives_stat_takes_its_threshold_from_the_configured_min_n() -> None:
    p = _stat()
    steps = p["fieldConfig"]["defaults"]["thresholds"]["steps"]
    assert [s["value"] for s in steps] == [None]  # no constant line: it comes from the query
    (n,) = [t for t in p["targets"] if "driftline_trigger_min_n" in t["expr"]]
    (cfg,) = p["transformations"]
    assert cfg["id"] == "configFromData" and cfg["options"]["configRefId"] == n["refId"]
    assert cfg["options"]["applyTo"] == {"id": "byFrameRefID", "options": p["targets"][0]["refId"]}
    assert [(m["fieldName"], m["handlerKey"]) for m in cfg["options"]["mappings"]] == [(n["legendFormat"],
                                                                                       "threshold1")]


def test_the_threshold_query_is_the_largest_min_n_counting_positives(tmp_path) -> None:
    """promtool evaluates the panel's query over the series the exporter writes for TRIGGERS: 200 (recall's
    largest; the FPR trigger counts negatives), and 0 (no minimum) for a model without such a trigger."""
    (n,) = [t for t in _stat()["targets"] if "driftline_trigger_min_n" in t["expr"]]

    def expr(model: str) -> str:
        return (n["expr"].replace("$model", model).replace("$cluster", ".*").replace("$job", "driftline")
                .replace("$instance", ".*"))
    series = [{"series": f'driftline_trigger_min_n{{job="driftline", instance="d:9108", model="fraud", '
                         f'trigger="{t["name"]}", severity="warning", metric="{t["metric"]}"}}',
               "values": f'{t["min_n"]}x5'} for t in TRIGGERS]
    (tmp_path / "empty.rules.yml").write_text("groups: []\n")
    (tmp_path / "t.test.yml").write_text(yaml.safe_dump({
        "rule_files": ["empty.rules.yml"], "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": series, "promql_expr_test": [
            {"expr": expr("fraud"), "eval_time": "2m", "exp_samples": [{"labels": '{model="fraud"}', "value": 200}]},
            {"expr": expr("other"), "eval_time": "2m", "exp_samples": [{"labels": "{}", "value": 0}]}]}]}))
    res = subprocess.run([require_binary("promtool"), "test", "rules", str(tmp_path / "t.test.yml")],
                         capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
