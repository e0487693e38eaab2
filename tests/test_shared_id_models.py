"""Two models scoring the same prediction ids (toxicity tryout: a toxicity and a spam model on one post id). Outcomes
name no model, so an outcome labels every model's prediction with its id: spam's `metrics` read a toxicity report
as its own label, and nothing said so. Such predictions are now counted (engine SHARED_MODELS), `replay` warns
naming the two models, `metrics` adds a note for either model, and the exporter shows
`driftline_shared_id_models_total`. Shadow variants of one model (the designed case) do not count."""

from __future__ import annotations

import json

from prometheus_client import CollectorRegistry

from driftline.cli import main
from driftline.config import from_dict
from driftline.exporter.collector import SnapshotCollector
from driftline.storage.store import Store

from helpers import outcome, pred

T0 = 1_795_600_800.0  # 2026-11-25T10:00:00Z
AT = "2026-11-26T00:00:00Z"


def _replay(capsys, db: str, path, *extra: str) -> tuple[dict, str]:
    assert main(["--db", db, "replay", str(path), "--json", *extra]) == 0
    out, err = capsys.readouterr()
    return json.loads(out), " ".join(err.split())


def _exported(db: str) -> float | None:
    store = Store(db)
    try:
        reg = CollectorRegistry()
        reg.register(SnapshotCollector(store, from_dict({"model": "toxicity"}), time_basis="event"))
        return reg.get_sample_value("driftline_shared_id_models_total")
    finally:
        store.close()


def test_ids_scored_by_two_models_are_counted_warned_and_noted(tmp_path, capsys) -> None:
    events = tmp_path / "two.jsonl"
    lines = [pred("post-A", 0.9, T0, model="toxicity"), pred("post-A", 0.2, T0, model="spam"),
             pred("post-B", 0.8, T0, model="toxicity"), pred("post-B", 0.1, T0, model="spam"),
             pred("post-B", 0.7, T0, model="spam", variant="B"),  # a second variant: one more shared prediction
             pred("post-C", 0.3, T0, model="toxicity"), outcome("post-A", 1, T0 + 3600)]
    events.write_bytes(b"\n".join(lines) + b"\n")
    db = f"sqlite:///{tmp_path / 'd.db'}"
    doc, err = _replay(capsys, db, events, "--batch-size", "3")
    (warning,) = [w for w in doc["warnings"] if "two models" in w]  # (and spam's variants: the shadow warning)
    assert warning.startswith("some prediction ids were scored by two models ('spam' and 'toxicity': 3 ids, "
                              "this replay)")
    assert "labels every model's prediction with that id" in warning and "warning: some prediction ids" in err
    assert _exported(db) == 3.0
    for model in ("spam", "toxicity"):
        assert main(["--db", db, "metrics", "--model", model, "--at", AT, "--json"]) == 0
        note = json.loads(capsys.readouterr().out)["note"]
        assert "scored by two models ('spam' and 'toxicity': 3 ids, all time)" in note, note


def test_shadow_variants_and_separate_ids_do_not_count(tmp_path, capsys) -> None:
    events = tmp_path / "one.jsonl"
    events.write_bytes(b"\n".join([pred("t1", 0.9, T0, variant="A"), pred("t1", 0.8, T0, variant="B"),
                                   pred("tox-1", 0.9, T0, model="toxicity"), pred("spam-1", 0.2, T0, model="spam"),
                                   outcome("t1", 1, T0 + 60)]) + b"\n")
    db = f"sqlite:///{tmp_path / 'd.db'}"
    doc, _ = _replay(capsys, db, events)
    assert not [w for w in doc["warnings"] if "two models" in w]
    assert _exported(db) == 0.0
    assert main(["--db", db, "metrics", "--model", "spam", "--at", AT, "--json"]) == 0
    assert "two models" not in (json.loads(capsys.readouterr().out).get("note") or "")


def test_alerts_validate_names_a_label_trigger_judged_with_another_models_outcomes(tmp_path, capsys) -> None:
    """`alerts validate` (and so every service start, which runs the same checks) names the label-reading triggers
    of a model whose ids another model scored too: a live `run` said it only in a counter nobody alerts on."""
    events = tmp_path / "two.jsonl"
    lines = [pred("post-A", 0.9, T0, model="toxicity"), pred("post-A", 0.2, T0, model="spam"),
             outcome("post-A", 1, T0 + 3600)]
    events.write_bytes(b"\n".join(lines) + b"\n")
    db = f"sqlite:///{tmp_path / 'd.db'}"
    _replay(capsys, db, events)
    cfg = tmp_path / "c.yaml"
    cfg.write_text("model: spam\ntriggers:\n  - {name: spam_recall, metric: recall, op: '<', value: 0.5, "
                   "window: 7d, variant: A}\n")
    main(["--db", db, "--config", str(cfg), "alerts", "validate"])
    out = " ".join("".join(capsys.readouterr()).split())
    assert "trigger 'spam_recall': some prediction ids were scored by two models ('spam' and 'toxicity'" in out, out
