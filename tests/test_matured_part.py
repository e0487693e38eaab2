"""Under the implicit-negative policy, metrics that read negatives come from the window's matured part only.

Churn tryout: negatives implicit after 60 days, positives reported 30–60 days after the prediction. Over a 70-day
window the labelled predictions were the matured ones (all labelled) plus the 30–60-day-old ones whose positive
outcome had come, without their negatives: precision read 0.801 where 0.614 is right, prevalence 0.456 where 0.25
is, and `precision < 0.7 over 70d` stayed ok. Here every number is a hand count over the constructed stream.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import yaml
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint

from driftline import cli

from helpers import outcome, pred

DAY = 86400.0
START = 1_780_272_000.0  # 2026-06-01T00:00:00Z
T_DAYS = 100
END = START + T_DAYS * DAY  # 2026-09-09T00:00:00Z
HOUR = 3600


def _stream() -> list[tuple[int, int, float, int, bool]]:
    """(hour, j, score, label, outcome stored) per prediction: per hour 4 predictions at its middle; j=0 a positive
    (0.9, missed at 0.1 when the hour is a multiple of 5), j=1 a negative flagged (0.5) in even hours, j=2, 3
    negatives at 0.1; the positive's outcome comes 30 + (hour mod 31) days later, stored when before END."""
    out = []
    for h in range(T_DAYS * 24):
        ts = START + h * HOUR + 1800
        for j in range(4):
            score = (0.1 if h % 5 == 0 else 0.9) if j == 0 else (0.5 if j == 1 and h % 2 == 0 else 0.1)
            out.append((h, j, score, int(j == 0), j == 0 and ts + (30 + h % 31) * DAY < END))
    return out


def _arm(h: int) -> str:
    """The variant of hour h's predictions in the two-arm stream: B on odd days."""
    return "B" if (h // 24) % 2 else "A"


def _replay(tmp_path, triggers: list[dict] | None = None, arms: bool = False, extra: dict | None = None) -> list[str]:
    lines = []
    for h, j, score, y, stored in _stream():
        ts = START + h * HOUR + 1800
        lines.append(pred(f"c{h}-{j}", score, ts, variant=_arm(h) if arms else "A", model="churn",
                          features={"plan": "basic" if j % 2 else "pro"}))
        if stored:
            lines.append(outcome(f"c{h}-{j}", 1, ts + (30 + h % 31) * DAY))
    lines.sort(key=lambda raw: json.loads(raw)["ts"])
    (tmp_path / "e.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    cfg = tmp_path / "c.yaml"
    labels = {"policy": "implicit_negative_after", "implicit_negative_after": "60d", "horizon": "90d"}
    cfg.write_text(yaml.safe_dump({"model": "churn", "threshold": 0.3, "window": "70d", "triggers": triggers or [],
                                   "labels": labels, "slices": ["plan"], **(extra or {})}))
    base = ["--config", str(cfg), "--db", f"sqlite:///{tmp_path / 'd.db'}"]
    assert cli.main([*base, "replay", str(tmp_path / "e.jsonl"), "--json"]) == 0
    return base


def exported_70d(base: list[str]) -> tuple[Any, list[dict[str, str]]]:
    """The config of a replayed CLI base and the exporter's 70d series at END, as promtool input series."""
    from driftline.config import load
    from driftline.exporter.collector import SnapshotCollector
    from driftline.storage.store import Store

    config = load(base[1])
    store = Store(base[3])
    try:
        fams = list(SnapshotCollector(store, config, clock=lambda: END, cache_s=0.0, time_basis="event").collect())
    finally:
        store.close()
    return config, [{"series": s.name + "{" + ", ".join(f'{k}="{v}"' for k, v in {**s.labels, "job": "driftline"}
                                                         .items()) + "}", "values": f"{s.value!r}x10"}
                    for f in fams for s in f.samples if s.labels.get("window") == "70d"]


def _wilson(k: int, n: int) -> tuple[float, float, float]:
    low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
    return k / n, low, high


def _close(rate: dict, k: int, n: int) -> None:
    value, low, high = _wilson(k, n)
    assert rate["n"] == n
    assert abs(rate["value"] - value) < 1e-12 and abs(rate["low"] - low) < 1e-9 and abs(rate["high"] - high) < 1e-9


def test_negative_reading_metrics_come_from_the_matured_part_only(tmp_path, capsys) -> None:
    base = _replay(tmp_path)
    capsys.readouterr()
    assert cli.main([*base, "metrics", "--window", "70d", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    # by hand: the newest event is the last prediction (END - 30 min); predictions before the bucket boundary at
    # or below it less 60 d (2026-07-10T23:00Z, hour 959) have their implicit label; the window starts at hour 720
    cutoff_h = 959
    rows = [r for r in _stream() if r[0] >= 30 * 24]
    old = [r for r in rows if r[0] < cutoff_h]
    young = [r for r in rows if r[0] >= cutoff_h]
    tp = sum(1 for _, _, s, y, _ in old if y and s >= 0.3)
    fp = sum(1 for _, _, s, y, _ in old if not y and s >= 0.3)
    positives_old = sum(y for *_, y, _ in old)
    assert (len(old), tp, fp) == (956, 191, 120)
    m = doc["metrics"]
    _close(m["precision"], tp, tp + fp)  # 0.614; the whole window read 0.801
    _close(m["prevalence"], positives_old, len(old))  # 0.250; read 0.456
    _close(m["fpr"], fp, len(old) - positives_old)
    # recall reads positives only: the whole window's labelled ones, early or matured
    lab_pos = [r for r in rows if r[3] and (r[0] < cutoff_h or r[4])]
    _close(m["recall"], sum(1 for _, _, s, *_ in lab_pos if s >= 0.3), len(lab_pos))
    part = doc["matured_part"]
    awaiting = sum(1 for r in young if not r[4])
    assert (part["before"], part["predictions"], part["young_predictions"], part["awaiting_implicit"]) == (
        "2026-07-10T23:00:00Z", 956, len(young), awaiting)
    assert doc["counts"]["predictions"] == len(rows) and doc["label_coverage"]["n"] == len(rows)
    assert "awaiting their implicit label" in doc["note"]
    by = doc["by_variant"][0]["metrics"]
    assert by["precision"]["value"] == m["precision"]["value"]
    assert cli.main([*base, "metrics", "--window", "70d"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"({awaiting:,} still awaiting their implicit label)" in text


def test_a_wholly_matured_window_reads_as_before(tmp_path, capsys) -> None:
    base = _replay(tmp_path)
    capsys.readouterr()
    assert cli.main([*base, "metrics", "--window", "30d", "--at", "2026-07-10T23:00:00Z", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["matured_part"] is None
    rows = [r for r in _stream() if 959 - 30 * 24 <= r[0] < 959]
    tp = sum(1 for _, _, s, y, _ in rows if y and s >= 0.3)
    fp = sum(1 for _, _, s, y, _ in rows if not y and s >= 0.3)
    _close(doc["metrics"]["precision"], tp, tp + fp)


def test_a_precision_trigger_judges_the_matured_part(tmp_path, capsys) -> None:
    rule = {"name": "precision_70d", "metric": "precision", "op": "<", "value": 0.7, "window": "70d"}
    base = _replay(tmp_path, [rule])
    capsys.readouterr()
    assert cli.main([*base, "alerts", "evaluate", "--at", "2026-09-09T00:00:00Z", "--json"]) == 0
    out = capsys.readouterr().out
    doc = json.loads(out[out.index("{"):])
    ev = [t for t in doc["triggers"] if t["name"] == "precision_70d"][0]
    assert ev["state"]["state"] == "firing", ev  # 0.614 < 0.7; the whole window's 0.801 kept it ok
    assert abs(ev["state"]["value"] - 191 / 311) < 1e-12 and ev["state"]["n"] == 311


def test_the_exporter_serves_the_matured_part_and_what_awaits(tmp_path, capsys) -> None:
    from driftline.config import load
    from driftline.exporter.collector import SnapshotCollector
    from driftline.storage.store import Store

    base = _replay(tmp_path)
    capsys.readouterr()
    assert cli.main([*base, "metrics", "--window", "70d", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    config = load(base[1])  # window: 70d, the exporter's window
    store = Store(base[3])
    try:
        fams = {m.name: m for m in SnapshotCollector(store, config, clock=lambda: END, cache_s=0.0,
                                                     time_basis="event").collect()}
    finally:
        store.close()

    def value(name: str) -> float:
        got = [s.value for s in fams[name].samples if s.labels["window"] == "70d" and s.labels["variant"] == "all"]
        assert len(got) == 1, (name, fams[name].samples)
        return got[0]

    assert value("driftline_precision_ratio") == doc["metrics"]["precision"]["value"]
    assert value("driftline_window_matured_predictions") == 956
    assert value("driftline_window_awaiting_implicit") == doc["matured_part"]["awaiting_implicit"]


def test_the_weekly_report_names_the_matured_part(tmp_path, capsys) -> None:
    base = _replay(tmp_path)
    capsys.readouterr()
    assert cli.main([*base, "report", "--week", "2026-W28", "--out", str(tmp_path / "r"), "--json"]) == 0
    out = capsys.readouterr().out
    doc = json.loads(out[out.index("{"):])
    week = [r for r in _stream() if 35 * 24 <= r[0] < 42 * 24]  # 2026-07-06 .. 07-13
    young = [r for r in week if r[0] >= 959]
    awaiting = sum(1 for r in young if not r[4])
    said = [x for x in doc["report"]["limitations"] if x.startswith("Negatives not all known yet")]
    assert len(said) == 1 and f"({len(week) - len(young)} of {len(week)})" in said[0], said
    assert f"; {awaiting} younger ones still await it" in said[0]


def test_ab_slices_and_calibration_over_a_partly_matured_window(tmp_path, capsys) -> None:
    """`calibration` reads reliability and the base rate, `slices` FPR and precision over the matured part, as
    `metrics` does (and `ab`: test_ab_reads_fpr_precision_costs_and_plans_over_the_matured_part)."""
    base = _replay(tmp_path)
    rows = [r for r in _stream() if r[0] >= 30 * 24]
    old = [r for r in rows if r[0] < 959]
    young = [r for r in rows if r[0] >= 959]  # the window (hours 720..2399) from the boundary on
    awaiting = sum(1 for r in young if not r[4])
    capsys.readouterr()
    assert cli.main([*base, "ab", "--window", "70d", "--json"]) == 0
    part = (f"are read over its {len(old):,} predictions before 2026-07-10T23:00:00Z (of 6,720), the ones at least "
            f"labels.implicit_negative_after (60 d) old; the {len(young):,} younger ones ({awaiting:,} still awaiting "
            f"their implicit label)")
    assert any(part in n for n in json.loads(capsys.readouterr().out)["notes"])
    assert cli.main([*base, "calibration", "--window", "70d", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert part in doc["note"]
    tp = sum(1 for _, _, s, y, _ in old if y and s >= 0.3)
    fp = sum(1 for _, _, s, y, _ in old if not y and s >= 0.3)
    _close(doc["base_rate"]["prevalence"]["current"], sum(r[3] for r in old), len(old))  # 0.25; read 0.456
    _close(doc["base_rate"]["observed_precision"], tp, tp + fp)
    assert sum(b["n"] for b in doc["calibration"]["reliability"]["width"]["bins"]) == len(old)
    assert doc["base_rate"]["over"] == "matured part"
    assert cli.main([*base, "calibration", "--window", "70d"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert part in text
    # its recall is the matured part's, not the whole window's that `metrics` shows: said so, not "(current)"
    assert "(this window's matured part) imply precision" in text and "(current)" not in text
    assert cli.main([*base, "slices", "--window", "70d", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert part in doc["note"]
    for v in doc["features"][0]["values"]:  # plan: pro holds j = 0, 2; basic j = 1, 3
        js = (0, 2) if v["value"] == "pro" else (1, 3)
        o = [r for r in old if r[1] in js]
        k = sum(1 for _, _, s, y, _ in o if y and s >= 0.3)
        f = sum(1 for _, _, s, y, _ in o if not y and s >= 0.3)
        neg = sum(1 for r in o if not r[3])
        _close(v["fpr"], f, neg)
        if k + f:
            _close(v["precision"], k, k + f)
        whole = [r for r in rows if r[1] in js and r[3] and (r[0] < 959 or r[4])]  # recall: every labelled positive
        if whole:
            _close(v["recall"], sum(1 for _, _, s, *_ in whole if s >= 0.3), len(whole))
    assert cli.main([*base, "calibration", "--window", "30d", "--at", "2026-07-10T23:00:00Z", "--json"]) == 0
    assert "note" not in json.loads(capsys.readouterr().out)  # wholly matured: nothing to say


def test_ab_reads_fpr_precision_costs_and_plans_over_the_matured_part(tmp_path, capsys) -> None:
    """Two arms (B on odd days) over the same stream: each arm's FPR and precision, their Newcombe difference,
    the always-valid plans and the costs come from the matured part (hours 720..958), as `metrics --variant` reads
    them; recall and the alert rate from the whole window. Before, precision read A 247/307 = 0.805 (the early
    positives of 5,764 young predictions without their negatives) where `metrics` read 96/156 = 0.615."""
    costs = {"currency": "EUR", "monthly_volume": 100000, "missed_positive": 100.0, "review_per_flag": 2.0}
    base = _replay(tmp_path, arms=True, extra={"costs": costs, "ab": {"planned_positives": 500}})
    capsys.readouterr()
    assert cli.main([*base, "ab", "--window", "70d", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = [r for r in _stream() if r[0] >= 30 * 24]
    arm = {a: [r for r in rows if _arm(r[0]) == a] for a in ("A", "B")}
    old = {a: [r for r in rs if r[0] < 959] for a, rs in arm.items()}
    hand = {}
    for a in ("A", "B"):
        o = old[a]
        tp = sum(1 for _, _, s, y, _ in o if y and s >= 0.3)
        fp = sum(1 for _, _, s, y, _ in o if not y and s >= 0.3)
        fn = sum(1 for _, _, s, y, _ in o if y and s < 0.3)
        tn = sum(1 for _, _, s, y, _ in o if not y and s < 0.3)
        hand[a] = (tp, fp, fn, tn)
        got = doc["arms"][a]
        assert got["matured"]["counts"] == {"tp": tp, "fp": fp, "fn": fn, "tn": tn, "unl_flagged": 0,
                                            "unl_unflagged": 0}
        assert got["matured"]["predictions"] == len(o)
        _close(got["precision"], tp, tp + fp)
        _close(got["fpr"], fp, fp + tn)
        lab_pos = [r for r in arm[a] if r[3] and (r[0] < 959 or r[4])]  # recall: every labelled positive
        _close(got["recall"], sum(1 for _, _, s, *_ in lab_pos if s >= 0.3), len(lab_pos))
        flagged = sum(1 for r in arm[a] if r[2] >= 0.3)
        _close(got["alert_rate"], flagged, len(arm[a]))
        # cost per prediction: review 2 per flag at the whole window's alert rate, 100 per miss at the matured
        # part's miss share among the unflagged (analysis.costs: m + r·a + c_fn·(1−a)·q)
        alert = flagged / len(arm[a])
        assert abs(got["cost_per_1000"]["value"] - 1000 * (2 * alert + 100 * (1 - alert) * fn / (fn + tn))) < 1e-9
        assert cli.main([*base, "metrics", "--window", "70d", "--variant", a, "--json"]) == 0
        m = json.loads(capsys.readouterr().out)["metrics"]
        assert m["precision"]["value"] == got["precision"]["value"] and m["fpr"]["n"] == got["fpr"]["n"]
    assert (hand["A"][0], hand["A"][0] + hand["A"][1]) == (96, 156)
    comp = doc["comparisons"][0]["metrics"]
    (tpb, fpb, fnb, tnb), (tpa, fpa, fna, tna) = hand["B"], hand["A"]
    for name, kt, nt, kc, nc in (("precision", tpb, tpb + fpb, tpa, tpa + fpa),
                                 ("fpr", fpb, fpb + tnb, fpa, fpa + tna)):
        low, high = confint_proportions_2indep(kt, nt, kc, nc, method="newcomb", compare="diff")
        c = comp[name]
        assert abs(c["diff"] - (kt / nt - kc / nc)) < 1e-12
        assert abs(c["low"] - low) < 1e-9 and abs(c["high"] - high) < 1e-9
        # the plan in the metric's units: planned positives × pooled n_metric / positives, of the matured part
        assert abs(c["seq_planned_per_arm"] - 500 * (nt + nc) / (tpb + fnb + tpa + fna)) < 1e-9, (name, c)
    assert any("each arm's FPR and precision" in n and "are read over its 956 predictions before "
               "2026-07-10T23:00:00Z (of 6,720)" in n for n in doc["notes"])


def test_rendered_rules_guard_min_n_with_the_matured_counts_as_alerts_evaluate_does(tmp_path, capsys) -> None:
    """`alerts render` guarded precision, prevalence and ROC AUC with the whole window's counts (602 flagged
    labelled, 1,317 labelled, min(600, 717)) where the exported values and `alerts evaluate` read the matured part
    (311, 956, min(239, 717)): at min_n one above the matured n evaluate said insufficient_data and the rule fired.
    The real promtool evaluates the rendered rules over the exporter's series: an alert fires exactly where
    evaluate says firing, at min_n = the matured n, and stays silent one above."""
    from driftline.triggers.rules import render_rules, to_yaml
    from services import require_binary

    rows = [r for r in _stream() if r[0] >= 30 * 24]
    old = [r for r in rows if r[0] < 959]
    flagged_labelled = sum(1 for r in old if r[2] >= 0.3)  # every matured prediction is labelled (or implicit)
    positives = sum(r[3] for r in old)
    assert (flagged_labelled, len(old), positives, len(old) - positives) == (311, 956, 239, 717)
    lines = {"precision": ("<", 0.7, flagged_labelled), "prevalence": (">", 0.2, len(old)),
             "roc_auc": (">", 0.5, min(positives, len(old) - positives))}
    triggers = [{"name": f"{m}_{tag}", "metric": m, "op": op, "value": v, "window": "70d", "min_n": n + extra}
                for m, (op, v, n) in lines.items() for tag, extra in (("at", 0), ("above", 1))]
    base = _replay(tmp_path, triggers)
    capsys.readouterr()
    assert cli.main([*base, "alerts", "evaluate", "--at", "2026-09-09T00:00:00Z", "--json"]) == 0
    out = capsys.readouterr().out
    states = {t["name"]: t["state"]["state"] for t in json.loads(out[out.index("{"):])["triggers"]}
    assert states == {t["name"]: "firing" if t["name"].endswith("_at") else "insufficient_data" for t in triggers}
    config, series = exported_70d(base)
    assert any(s["series"].startswith("driftline_window_matured_true_positives{") for s in series)
    (tmp_path / "r.yml").write_text(to_yaml(render_rules(config)))
    firing = ["PrecisionAt", "PrevalenceAt", "RocAucAt"]
    desc = ("Precision of model churn (version all, variant all) over the last 70d is 0.614, under the agreed line "
            "of 0.70 (95% interval 0.559 to 0.667, n = 311 flagged labelled predictions).")
    labels = {"severity": "warning", "trigger": "precision_at", "model": "churn", "model_version": "all",
              "variant": "all", "window": "70d", "job": "driftline"}
    (tmp_path / "t.yml").write_text(yaml.safe_dump({
        "rule_files": ["r.yml"], "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": series,
                   "promql_expr_test": [{"expr": 'count by (alertname) (ALERTS{alertstate="firing"})',
                                         "eval_time": "5m",
                                         "exp_samples": [{"labels": f'{{alertname="{a}"}}', "value": 1}
                                                         for a in firing]}],
                   "alert_rule_test": [{"eval_time": "5m", "alertname": "PrecisionAt", "exp_alerts": [
                       {"exp_labels": labels, "exp_annotations": {
                           "summary": "Precision of churn is 0.614 over 70d (line < 0.70)", "description": desc,
                           "runbook_url": "https://github.com/driftline/driftline/blob/main/docs/RUNBOOKS.md"
                                          "#precisionat"}}]}]}]}))
    res = subprocess.run([require_binary("promtool"), "test", "rules", str(tmp_path / "t.yml")],
                         capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
