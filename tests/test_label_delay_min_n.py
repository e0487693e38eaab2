"""A label-delay trigger's n is the number of label delays behind its quantile: the predictions with an outcome
event (labelled less implicit negatives, which come with no delay), as `alerts evaluate` counts it. The rendered
rule's min_n guard counted every labelled prediction (`driftline_window_labelled`, implicit negatives included):
on tests/test_matured_part.py's churn stream over 70d (1,317 labelled, 717 of them implicit negatives, 600 outcomes)
a `label_delay_p95 > 30d` trigger with min_n 601 said insufficient_data in `alerts evaluate` while the rule fired.
The real promtool evaluates the rendered rules over the exporter's series: an alert fires exactly where evaluate
says firing, at min_n = 600, and stays silent one above.
"""

from __future__ import annotations

import json
import subprocess

import yaml

from driftline import cli

from test_matured_part import _replay, _stream, exported_70d


def test_label_delay_rules_guard_min_n_with_the_outcomes_as_alerts_evaluate_does(tmp_path, capsys) -> None:
    from driftline.triggers.rules import render_rules, to_yaml
    from services import require_binary

    rows = [r for r in _stream() if r[0] >= 30 * 24]
    matured = [r for r in rows if r[0] < 959]  # labelled: positives by an outcome, negatives implicit
    outcomes = sum(1 for r in rows if r[4])  # every positive whose outcome came (stored before END)
    implicit = sum(1 for r in matured if not r[3])
    assert (outcomes + implicit, implicit, outcomes) == (1317, 717, 600)
    triggers = [{"name": f"delay_{q}_{tag}", "metric": f"label_delay_{q}", "op": ">", "value": 30 * 86400,
                 "window": "70d", "min_n": outcomes + extra}
                for q in ("p50", "p95") for tag, extra in (("at", 0), ("above", 1))]
    base = _replay(tmp_path, triggers)
    capsys.readouterr()
    assert cli.main([*base, "alerts", "evaluate", "--at", "2026-09-09T00:00:00Z", "--json"]) == 0
    out = capsys.readouterr().out
    evaluated = {t["name"]: t["state"] for t in json.loads(out[out.index("{"):])["triggers"]}
    assert {k: s["state"] for k, s in evaluated.items()} == {
        t["name"]: "firing" if t["name"].endswith("_at") else "insufficient_data" for t in triggers}
    assert evaluated["delay_p95_at"]["n"] == outcomes
    config, series = exported_70d(base)
    (tmp_path / "r.yml").write_text(to_yaml(render_rules(config)))
    (tmp_path / "t.yml").write_text(yaml.safe_dump({
        "rule_files": ["r.yml"], "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": series,
                   "promql_expr_test": [{"expr": 'count by (alertname) (ALERTS{alertstate="firing"})',
                                         "eval_time": "5m",
                                         "exp_samples": [{"labels": f'{{alertname="{a}"}}', "value": 1}
                                                         for a in ("DelayP50At", "DelayP95At")]}]}]}))
    res = subprocess.run([require_binary("promtool"), "test", "rules", str(tmp_path / "t.yml")],
                         capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
