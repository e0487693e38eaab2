"""`driftline config check`: the config validated as every command validates it, with no database and no network
(an SRE's pre-rollout check was `alerts render --out /dev/null`); a summary of what was read, or the error naming
the field and its line; exit 0 / 2; `--json` for machines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from driftline.cli import main

EXAMPLE = Path(__file__).resolve().parents[1] / "driftline.example.yaml"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    cap = capsys.readouterr()
    return code, cap.out, cap.err


@pytest.fixture(autouse=True)
def _no_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test runs in an empty folder with DRIFTLINE_DB naming a SQLite file there: nothing may create it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DRIFTLINE_CONFIG", raising=False)
    monkeypatch.setenv("DRIFTLINE_DB", f"sqlite:///{tmp_path / 'nowhere' / 'x.db'}")  # its folder does not exist
    return tmp_path


def test_a_valid_config_is_summarised_without_a_database(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = _run(capsys, "--config", str(EXAMPLE), "config", "check")
    assert (code, err) == (0, "")
    assert out.startswith(f"config {EXAMPLE}: valid\n")
    assert "  model fraud, threshold 0.5, bucket 1h, window 7d\n" in out
    assert "  labels: horizon 90d, explicit\n" in out
    assert "  triggers: 2\n    recall_below_target: recall < 0.7 over 7d (critical)\n" in out
    assert "kafka: predictions_topic predictions, outcomes_topic outcomes" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no driftline.db, no folder


def test_json_gives_the_summary(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("model: churn\nthreshold: 0.3\nlabels: {horizon: 30d}\nkafka: {predictions_topic: p, "
                   "outcomes_topic: o, dead_letter_topic: dlt, options: {security_protocol: SASL_SSL}}\n"
                   "triggers: [{name: r, metric: recall, op: '<', value: 0.6, variant: B}]\n")
    code, out, _ = _run(capsys, "--config", str(cfg), "config", "check", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["ok"] is True and doc["config"] == str(cfg)
    s = doc["summary"]
    assert (s["model"], s["threshold"], s["labels"]["horizon"]) == ("churn", 0.3, "30d")
    assert s["kafka"] == {"bootstrap": None, "predictions_topic": "p", "outcomes_topic": "o",
                          "dead_letter_topic": "dlt", "group_id": "driftline", "options": ["security_protocol"]}
    assert s["triggers"] == [{"name": "r", "metric": "recall", "op": "<", "value": 0.6, "window": "7d",
                              "severity": "warning", "feature": None, "variant": "B"}]


@pytest.mark.parametrize("text, field", [
    ("model: fraud\nthreshold: yes\n", "line 2: invalid field `threshold`"),
    ("kafka:\n  options:\n    requst_timeout_ms: 1000\n", "line 3: invalid field `kafka.options.requst_timeout_ms`"),
    ("triggers:\n  - {name: r, metric: recal, op: '<', value: 0.7}\n", "line 2: invalid field `triggers[0].metric`"),
])
def test_a_refused_config_names_the_field_and_line(capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str,
                                                   field: str) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(text)
    code, out, err = _run(capsys, "--config", str(cfg), "config", "check")
    assert code == 2 and out == ""
    assert err.startswith(f"error: config {cfg}, {field}:")
    code, out, err = _run(capsys, "--config", str(cfg), "config", "check", "--json")
    doc = json.loads(out)
    assert code == 2 and err == "" and doc["ok"] is False and doc["error"].startswith(f"config {cfg}, {field}:")


def test_an_unusable_database_url_in_the_config_is_refused(capsys: pytest.CaptureFixture[str],
                                                           tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("database: mysql://u:secret@db/x\n")
    code, out, err = _run(capsys, "--config", str(cfg), "config", "check", "--json")
    doc = json.loads(out)
    assert code == 2 and "unsupported database 'mysql'" in doc["error"] and "secret" not in out


def test_without_a_config_the_check_refuses(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "config", "check")
    assert code == 2 and err.startswith("error: no config given: pass --config PATH")
