"""Ids scored by two variants of a model under `ab.design: split` are counted and said (a shadow arm beside a split).

Churn tryout: control and gbm-v7 split the customers while gbm-v8-shadow scored every one of them. With the split
configured, `metrics` read recall over 2,020 'positives' for 1,010 churners (each id once per variant, the shadow
scores mixed into production's), the triggers judged that, and nothing said so.
"""

from __future__ import annotations

import json

import yaml

from driftline import cli
from driftline.core.engine import SHARED_IDS, Engine, EngineSettings, JoinView, shared_id_label

from helpers import decoded, outcome, pred

START = 1_780_272_000.0  # 2026-06-01T00:00:00Z


def test_shared_id_label_is_order_free() -> None:
    assert shared_id_label("churn", "shadow", "control") == shared_id_label("churn", "control", "shadow") \
        == "churn\tcontrol\tshadow"


def _events(shadow: bool) -> bytes:
    lines = []
    for i in range(400):
        ts = START + i * 600
        arm = "control" if i % 2 else "gbm-v7"
        lines.append(pred(f"c{i}", 0.2 + 0.5 * (i % 3 == 0), ts, variant=arm, model="churn"))
        if shadow:
            lines.append(pred(f"c{i}", 0.1 + 0.5 * (i % 4 == 0), ts, variant="gbm-v8-shadow", model="churn"))
        lines.append(outcome(f"c{i}", i % 2, ts + 60))
    return b"\n".join(lines) + b"\n"


def _base(tmp_path, shadow: bool, ab: dict) -> list[str]:
    path = tmp_path / "e.jsonl"
    path.write_bytes(_events(shadow))
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"model": "churn", "threshold": 0.3, "ab": ab, "triggers": [
        {"name": "recall_low", "metric": "recall", "op": "<", "value": 0.6, "window": "7d"}]}))
    return ["--config", str(cfg), "--db", f"sqlite:///{tmp_path / 'd.db'}"]


SPLIT = {"design": "split", "control": "control", "arms": {"control": 0.5, "gbm-v7": 0.5}}


def test_a_shadow_arm_beside_a_split_is_counted_and_said(tmp_path, capsys) -> None:
    base = _base(tmp_path, True, SPLIT)
    assert cli.main([*base, "replay", str(tmp_path / "e.jsonl"), "--json"]) == 0
    warnings = json.loads(capsys.readouterr().out)["warnings"]
    said = [w for w in warnings if "scored by two variants of model 'churn'" in w]
    assert len(said) == 1 and "'control' and 'gbm-v8-shadow': 200" in said[0] \
        and "'gbm-v7' and 'gbm-v8-shadow': 200" in said[0] and "this replay" in said[0]
    assert cli.main([*base, "metrics", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "scored by two variants of model 'churn'" in doc["note"] and "all time" in doc["note"]
    assert cli.main([*base, "metrics", "--variant", "control", "--json"]) == 0  # one variant: nothing doubled
    assert "two variants" not in (json.loads(capsys.readouterr().out).get("note") or "")
    assert cli.main([*base, "alerts", "validate"]) == 1
    assert "trigger 'recall_low' (whole model): some prediction ids were scored by two variants" in \
        " ".join(capsys.readouterr().err.split())


def test_a_plain_split_or_a_shadow_design_says_nothing(tmp_path, capsys) -> None:
    base = _base(tmp_path, False, SPLIT)
    assert cli.main([*base, "replay", str(tmp_path / "e.jsonl"), "--json"]) == 0
    assert not any("two variants" in w for w in json.loads(capsys.readouterr().out)["warnings"])
    assert cli.main([*base, "metrics", "--json"]) == 0
    assert "two variants" not in (json.loads(capsys.readouterr().out).get("note") or "")
    (tmp_path / "s").mkdir()
    shadow = _base(tmp_path / "s", True, {"design": "shadow", "control": "control",
                                          "arms": {"control": 0.4, "gbm-v7": 0.3, "gbm-v8-shadow": 0.3}})
    assert cli.main([*shadow, "replay", str(tmp_path / "s" / "e.jsonl"), "--json"]) == 0
    assert not any("two variants" in w for w in json.loads(capsys.readouterr().out)["warnings"])


def test_the_count_does_not_depend_on_arrival_order() -> None:
    def counts(order: list[bytes]) -> dict:
        e = Engine(EngineSettings(threshold=0.3), JoinView())
        for d in decoded(order):
            e.apply(d)
        return {k: v for k, v in e.finish().counters.items() if k[0] == SHARED_IDS}

    a = pred("x", 0.5, START, variant="control", model="churn")
    b = pred("x", 0.4, START, variant="shadow", model="churn")
    other_model = pred("x", 0.4, START, variant="shadow", model="fraud")
    assert counts([a, b, other_model]) == counts([b, other_model, a]) == {(SHARED_IDS, "churn\tcontrol\tshadow"): 1}


def test_names_of_the_longest_allowed_length_still_fit_the_counter_label(tmp_path, capsys, pg_url) -> None:
    """Model and variant names may each have MAX_NAME_LEN (200) characters and counter labels are VARCHAR(200):
    the pair's label 'model\\tA\\tB' of 602 characters made PostgreSQL refuse the whole batch (value too long),
    so every replay (and the live consumer) of such a stream failed. Each name is cut to a third of the label."""
    from driftline.core.limits import MAX_NAME_LEN

    model, a, b = "m" * MAX_NAME_LEN, "a" * MAX_NAME_LEN, "b" * MAX_NAME_LEN
    lines = [pred(f"c{i}", 0.7, START + i, variant=arm, model=model) for i in range(5) for arm in (a, b)]
    path = tmp_path / "e.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"model": model, "threshold": 0.3, "ab": {
        "design": "split", "control": a, "arms": {a: 0.5, b: 0.5}}}))
    base = ["--config", str(cfg), "--db", pg_url]
    assert cli.main([*base, "replay", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    said = [w for w in doc["warnings"] if "scored by two variants of model" in w]
    assert len(said) == 1 and ": 5 ids" in said[0]
    assert cli.main([*base, "metrics", "--json"]) == 0
    assert "scored by two variants of model" in json.loads(capsys.readouterr().out)["note"]
    assert len(shared_id_label(model, a, b)) <= MAX_NAME_LEN


def test_long_model_names_with_the_same_start_keep_their_own_counts(tmp_path, capsys) -> None:
    """Two models whose names agree on their first 70 characters (verify tryout): the label's bare cut to 66
    characters merged their counts, so `metrics` of one showed both models' shared ids and the replay named a model
    'mmm…' that does not exist. A long name is now cut and hashed (engine.shared_name)."""
    stem = "m" * 70
    one, two, a, b, s = stem + "x" * 130, stem + "y" * 130, "a" * 200, "b" * 200, "s" * 200
    lines = [pred(f"c{i}", 0.7, START + i, variant=arm, model=model)
             for model, n in ((one, 4), (two, 9)) for i in range(n) for arm in (a, s)]
    path = tmp_path / "e.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"model": one, "ab": {"design": "split", "control": a, "arms": {a: 0.5, b: 0.5}}}))
    base = ["--config", str(cfg), "--db", f"sqlite:///{tmp_path / 'x.db'}"]
    assert cli.main([*base, "replay", str(path), "--json"]) == 0
    said = [w for w in json.loads(capsys.readouterr().out)["warnings"] if "scored by two variants of model" in w]
    assert len(said) == 2 and sorted(w.count(": 4 ids") + 2 * w.count(": 9 ids") for w in said) == [1, 2]
    for model, n in ((one, 4), (two, 9)):
        assert cli.main([*base, "metrics", "--model", model, "--json"]) == 0
        note = json.loads(capsys.readouterr().out)["note"]
        assert f"model '{model}'" in note and f": {n} ids, all time" in note
