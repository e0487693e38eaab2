"""Shadow mode's whole-model numbers are the production (control) arm's (readouts.headline), in every consumer.

New-user tryout: 2,000 transactions (10 % fraud) scored by a perfect production arm A and an inverted shadow arm S
(`ab.design: shadow`) read as recall 0.500 n=400 and FPR 0.500 n=3,600 in `metrics`, fired both triggers, wrote
"4,000 predictions" in the report and exported the sum as `variant="all"`; `drift` counted each feature vector
twice. The same replay is checked here through replay → metrics --json, alerts evaluate, the report document, the
exporter's collector, drift and calibration, against sklearn on A's own predictions; S stays visible per variant,
and a split A/B still sums its arms.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from sklearn.metrics import confusion_matrix

from driftline.cli import main
from driftline.config import load
from driftline.exporter.collector import SnapshotCollector
from driftline.readouts.headline import headline_variant, scope_json
from driftline.reports.data import report_document
from driftline.reports.weeks import parse_week
from driftline.storage.store import Store

START = 1_795_392_000.0  # 2026-11-23T00:00:00Z, Monday of 2026-W48
END = START + 7 * 86400.0
N = 2000


def _world(tmp_path: Path, design: str) -> tuple[Path, Path, np.ndarray, dict[str, np.ndarray]]:
    """The tryout's events (a feature added, so drift has vectors to count) and its config with the triggers."""
    rng = np.random.default_rng(7)
    y = np.zeros(N, dtype=int)
    y[rng.choice(N, N // 10, replace=False)] = 1
    scores = {"A": np.where(y == 1, 0.9, 0.1), "S": np.where(y == 1, 0.1, 0.9)}
    amount = rng.normal(50, 10, N)
    lines = []
    for i in range(N):
        ts = START + i * (3 * 86400 / N)
        stamp = f"{_iso(ts)}"
        arms = ("A", "S") if design == "shadow" else (("A",) if i % 2 == 0 else ("S",))
        for v in arms:
            lines.append({"type": "prediction", "prediction_id": f"t{i}", "model": "fr", "variant": v,
                          "model_version": "v1" if v == "A" else "v2", "ts": stamp, "score": float(scores[v][i]),
                          "features": {"amount": float(amount[i])}})
        lines.append({"type": "outcome", "prediction_id": f"t{i}", "label": int(y[i]), "ts": _iso(ts + 3600)})
    events = tmp_path / f"{design}.jsonl"
    events.write_text("".join(json.dumps(e) + "\n" for e in lines))
    cfg = tmp_path / f"{design}.yaml"
    cfg.write_text(yaml.safe_dump({
        "model": "fr", "features": {"amount": "numeric"},
        "ab": {"design": design, "control": "A", "arms": {"A": 0.5, "S": 0.5}},
        "triggers": [{"name": "recall_low", "metric": "recall", "op": "<", "value": 0.7, "window": "7d",
                      "severity": "critical"},
                     {"name": "fpr_high", "metric": "fpr", "op": ">", "value": 0.1, "window": "7d"},
                     {"name": "shadow_recall", "metric": "recall", "op": "<", "value": 0.7, "window": "7d",
                      "variant": "S"}]}))
    return cfg, events, y, scores


def _db(cfg: Path) -> str:
    return f"sqlite:///{cfg.with_suffix('.db')}"


def _on(cfg: Path) -> list[str]:
    """--config and --db of the world's config."""
    return ["--config", str(cfg), "--db", _db(cfg)]


def _iso(ts: float) -> str:
    from driftline.core.events import iso

    return iso(ts)


def _json(capsys: Any, *args: str) -> Any:
    capsys.readouterr()
    assert main(list(args)) == 0
    return json.loads(capsys.readouterr().out)


def _reference(y: np.ndarray, s: np.ndarray) -> dict[str, Any]:
    """recall, FPR and their n from sklearn's confusion matrix of one arm's predictions at threshold 0.5."""
    tn, fp, fn, tp = confusion_matrix(y, (s >= 0.5).astype(int), labels=[0, 1]).ravel()
    return {"recall": tp / (tp + fn), "recall_n": tp + fn, "fpr": fp / (fp + tn), "fpr_n": fp + tn,
            "predictions": len(y)}


@pytest.fixture
def shadow(tmp_path, capsys):
    cfg, events, y, scores = _world(tmp_path, "shadow")
    assert main([*_on(cfg), "replay", str(events)]) == 0
    capsys.readouterr()
    return cfg, y, scores


def test_shadow_headline_metrics_alerts_and_report_are_the_production_arm(shadow, capsys) -> None:
    cfg, y, scores = shadow
    ref_a, ref_s = _reference(y, scores["A"]), _reference(y, scores["S"])
    assert (ref_a["recall"], ref_a["fpr"], ref_s["recall"], ref_s["fpr"]) == (1.0, 0.0, 0.0, 1.0)
    doc = _json(capsys, *_on(cfg), "metrics", "--at", "2026-11-30", "--json")
    m, c = doc["metrics"], doc["counts"]
    assert c["predictions"] == N == ref_a["predictions"] and c["positives"] == ref_a["recall_n"] == 200
    assert m["recall"]["value"] == ref_a["recall"] and m["recall"]["n"] == ref_a["recall_n"]
    assert m["fpr"]["value"] == ref_a["fpr"] and m["fpr"]["n"] == ref_a["fpr_n"] == 1800
    assert m["roc_auc"]["value"] == pytest.approx(1.0)
    assert doc["scope"]["control"] == "A" and doc["scope"]["shadow_arms"] == ["S"]
    by = {g["variant"]: g for g in doc["by_variant"]}
    assert by["S"]["metrics"]["recall"]["value"] == ref_s["recall"] and by["S"]["counts"]["predictions"] == N
    assert by["S"]["metrics"]["fpr"]["value"] == ref_s["fpr"]
    # --variant S still reads the shadow arm alone, with no scope line
    s_doc = _json(capsys, *_on(cfg), "metrics", "--at", "2026-11-30", "--variant", "S", "--json")
    assert s_doc["metrics"]["recall"]["value"] == ref_s["recall"] and s_doc["scope"] is None
    # the human table says what the headline counts
    assert main([*_on(cfg), "metrics", "--at", "2026-11-30"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "production arm A only (ab.design: shadow; shadow arm S is not summed in" in out
    # alerts: the whole-model triggers read A (no page), the trigger naming S still reads S
    ev = _json(capsys, *_on(cfg), "alerts", "evaluate", "--at", "2026-11-30", "--no-notify", "--json")
    states = {t["name"]: t["state"] for t in ev["triggers"]}
    assert states["recall_low"]["state"] == "ok" and states["fpr_high"]["state"] == "ok"
    assert (states["recall_low"]["value"], states["recall_low"]["n"]) == (ref_a["recall"], ref_a["recall_n"])
    assert (states["fpr_high"]["value"], states["fpr_high"]["n"]) == (ref_a["fpr"], ref_a["fpr_n"])
    assert states["shadow_recall"]["state"] == "firing" and states["shadow_recall"]["value"] == ref_s["recall"]
    # the weekly report's headline
    config = load(cfg)
    store = Store(_db(cfg), clock=lambda: END + 30 * 86400)
    rep = report_document(store, config, "fr", parse_week("2026-W48"), END + 30 * 86400)
    assert rep["headline"]["metrics"]["counts"]["predictions"] == N
    rows = {r["metric"]: r for r in rep["headline"]["rows"]}
    assert rows["recall"]["value"] == 1.0 and rows["fpr"]["value"] == 0.0
    assert "below" not in rep["summary"] and rep["headline"]["metrics"]["scope"]["control"] == "A"
    assert sum(d["counts"]["predictions"] for d in rep["trends"]["days"]) == N
    store.close()


def _samples(col: SnapshotCollector, name: str) -> dict[tuple[str, str], float]:
    fam = {m.name: m for m in col.collect()}[name]
    return {(s.labels["variant"], s.labels["window"]): s.value for s in fam.samples}


def test_shadow_exporter_drift_and_calibration_count_the_production_arm(shadow, capsys) -> None:
    cfg, y, scores = shadow
    config = load(cfg)
    store = Store(_db(cfg), clock=lambda: END)
    col = SnapshotCollector(store, config, clock=lambda: END, cache_s=0.0)
    recall = _samples(col, "driftline_recall_ratio")
    fpr = _samples(col, "driftline_fpr_ratio")
    assert recall[("all", "7d")] == 1.0 and fpr[("all", "7d")] == 0.0
    assert recall[("S", "7d")] == 0.0 and fpr[("S", "7d")] == 1.0
    preds = _samples(col, "driftline_window_predictions")
    assert preds[("all", "7d")] == N and preds[("A", "7d")] == N and preds[("S", "7d")] == N
    store.close()
    # drift and calibration against a reference built from the same days: A's 2,000 vectors, not 4,000
    assert main([*_on(cfg), "reference", "set", "--from", "2026-11-23", "--to", "2026-11-30"]) == 0
    assert "counted: production arm A only" in " ".join(capsys.readouterr().out.split())
    d = _json(capsys, *_on(cfg), "drift", "--at", "2026-11-30", "--json")
    assert d["window"]["n"] == N and d["scope"]["control"] == "A" and d["reference"]["n"] == N
    amount = {f["feature"]: f for f in d["features"]}["amount"]
    assert amount["n_current"] == N and d["score"]["n_current"] == N and d["score"]["psi"] == pytest.approx(0.0)
    cal = _json(capsys, *_on(cfg), "calibration", "--at", "2026-11-30", "--json")
    assert cal["window"]["n"] == N and cal["window"]["labelled"] == N and cal["scope"]["control"] == "A"


def test_split_ab_whole_model_still_sums_the_arms(tmp_path, capsys) -> None:
    cfg, events, y, scores = _world(tmp_path, "split")
    assert main([*_on(cfg), "replay", str(events)]) == 0
    doc = _json(capsys, *_on(cfg), "metrics", "--at", "2026-11-30", "--json")
    served = np.where(np.arange(N) % 2 == 0, scores["A"], scores["S"])  # each id went to one arm
    ref = _reference(y, served)
    assert doc["counts"]["predictions"] == N and doc["scope"] is None
    assert doc["metrics"]["recall"]["value"] == pytest.approx(ref["recall"])
    assert doc["metrics"]["recall"]["n"] == ref["recall_n"] and doc["metrics"]["fpr"]["n"] == ref["fpr_n"]
    assert doc["metrics"]["fpr"]["value"] == pytest.approx(ref["fpr"])
    config = load(cfg)
    store = Store(_db(cfg), clock=lambda: END)
    preds = _samples(SnapshotCollector(store, config, clock=lambda: END, cache_s=0.0), "driftline_window_predictions")
    assert preds[("all", "7d")] == N == preds[("A", "7d")] + preds[("S", "7d")]
    store.close()


def test_headline_variant_rule() -> None:
    shadow = load_ab({"design": "shadow", "control": "A", "arms": {"A": 0.5, "S": 0.5}})
    split = load_ab({"design": "split", "control": "A", "arms": {"A": 0.5, "B": 0.5}})
    assert headline_variant(shadow, None) == "A" and headline_variant(shadow, "S") == "S"
    assert headline_variant(split, None) is None and headline_variant(split, "B") == "B"
    assert scope_json(split, None) is None and scope_json(shadow, "S") is None
    assert scope_json(shadow, None, ["S", "T"])["shadow_arms"] == ["S", "T"]


def load_ab(d: dict[str, Any]) -> Any:
    from driftline.config import from_dict

    return from_dict({"ab": d}).ab


def test_a_shadow_design_without_its_production_arm_is_refused_at_load(tmp_path, capsys) -> None:
    """Verification tryout: `ab: {design: shadow}` alone took 'A' as production; with production sending no
    variant ('default') every whole-model number and alert was empty while `driftline ab` took the shadow arm as
    control. Which arm is production must now be said."""
    cfg = tmp_path / "bare.yaml"
    cfg.write_text("model: fr\nab: {design: shadow}\n")
    assert main([*_on(cfg), "metrics"]) == 2
    assert "invalid field `ab.control`: missing: with `ab.design: shadow`" in capsys.readouterr().err


def test_shadow_without_the_control_arm_says_why_the_headline_is_empty(tmp_path, capsys) -> None:
    """A production arm named in the config but absent from the data: the note says which variants are here."""
    cfg = tmp_path / "bare.yaml"
    cfg.write_text("model: fr\nab: {design: shadow, control: A, arms: {A: 0.5, cand: 0.5}}\n")
    events = tmp_path / "bare.jsonl"
    events.write_text("".join(json.dumps({"type": "prediction", "prediction_id": f"t{i}", "model": "fr",
                                          "variant": v, "ts": _iso(START + i * 60), "score": 0.2}) + "\n"
                              for i in range(40) for v in ("prod", "cand")))
    assert main([*_on(cfg), "replay", str(events)]) == 0
    doc = _json(capsys, *_on(cfg), "metrics", "--at", "2026-11-30", "--json")
    assert doc["counts"]["predictions"] == 0 and {g["variant"] for g in doc["by_variant"]} == {"prod", "cand"}
    assert "no predictions of the production arm 'A'" in doc["note"] and "variants here: cand, prod" in doc["note"]
