"""A label-reading trigger whose window is shorter than the model's label delay is named at validate and evaluate.

Churn tryout: outcomes arrive 30–60 days after the prediction; `recall < 0.60 over 7d` judged the newest 7 days,
which never hold a label, so it read insufficient_data for ever while `alerts validate` said every trigger was fine.
"""

from __future__ import annotations

import json

import yaml

from driftline import cli

from helpers import outcome, pred

DAY = 86400.0
START = 1_780_272_000.0  # 2026-06-01T00:00:00Z


def _base(tmp_path, delay_s: float, triggers: list[dict]) -> list[str]:
    lines = []
    for i in range(14 * 24):
        ts = START + i * 3600
        lines += [pred(f"c{i}", 0.2 + 0.5 * (i % 3 == 0), ts, model="churn"), outcome(f"c{i}", i % 2, ts + delay_s)]
    lines.sort(key=lambda raw: json.loads(raw)["ts"])
    path = tmp_path / "e.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"model": "churn", "threshold": 0.3, "triggers": triggers}))
    base = ["--config", str(cfg), "--db", f"sqlite:///{tmp_path / 'd.db'}"]
    assert cli.main([*base, "replay", str(path), "--json"]) == 0
    return base


RECALL_7D = {"name": "recall_low", "metric": "recall", "op": "<", "value": 0.6, "window": "7d"}
ALERTS_7D = {"name": "alerts_high", "metric": "alert_rate", "op": ">", "value": 0.99, "window": "7d"}


def test_validate_names_a_trigger_window_shorter_than_the_label_delay(tmp_path, capsys) -> None:
    base = _base(tmp_path, 35 * DAY, [RECALL_7D, ALERTS_7D])
    capsys.readouterr()
    assert cli.main([*base, "alerts", "validate"]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert "trigger 'recall_low': recall over the newest 7d needs labels" in err
    assert "labels of model 'churn' arrive" in err and "`window: " in err
    assert "alerts_high" not in err  # the alert rate needs no label
    assert cli.main([*base, "alerts", "evaluate", "--dry-run", "--no-notify"]) == 0
    assert "trigger 'recall_low': recall over the newest 7d needs labels" in " ".join(capsys.readouterr().err.split())


def test_no_warning_when_the_window_outlasts_the_delay(tmp_path, capsys) -> None:
    base = _base(tmp_path, 35 * DAY, [{**RECALL_7D, "window": "70d"}, ALERTS_7D])
    capsys.readouterr()
    assert cli.main([*base, "alerts", "validate"]) == 0
    assert "needs labels" not in capsys.readouterr().err


def test_no_warning_for_labels_that_come_within_the_window(tmp_path, capsys) -> None:
    base = _base(tmp_path, 2 * DAY, [RECALL_7D])  # the fraud setting: labels days later
    capsys.readouterr()
    assert cli.main([*base, "alerts", "validate"]) == 0
    assert "needs labels" not in capsys.readouterr().err


def test_validate_and_evaluate_print_json_wherever_json_is_given(tmp_path, capsys) -> None:
    """Verify tryout: `alerts --json validate` printed the text report and `alerts validate --json` was refused;
    `alerts --json evaluate` printed the table (the subcommand's own --json default overrode the parent's)."""
    base = _base(tmp_path, 35 * DAY, [RECALL_7D, ALERTS_7D])
    capsys.readouterr()
    docs = []
    for args in (["alerts", "--json", "validate"], ["alerts", "validate", "--json"]):
        assert cli.main([*base, *args]) == 1
        docs.append(json.loads(capsys.readouterr().out))
    assert docs[0] == docs[1]
    (problem,) = docs[0]["problems"]
    assert (docs[0]["model"], docs[0]["triggers"], docs[0]["ok"]) == ("churn", 2, False)
    assert "trigger 'recall_low': recall over the newest 7d needs labels" in problem
    for args in (["alerts", "--json", "evaluate"], ["alerts", "evaluate", "--json"]):
        assert cli.main([*base, *args, "--dry-run", "--no-notify"]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert doc["model"] == "churn" and [t["name"] for t in doc["triggers"]] == ["recall_low", "alerts_high"]
    assert cli.main([*base, "alerts", "validate"]) == 1
    assert capsys.readouterr().out == ""  # the text form keeps its warning on stderr
