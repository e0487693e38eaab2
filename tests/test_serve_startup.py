"""`driftline serve`'s start line is truthful about which model its triggers judge: with no `model:` in the config
it named the built-in default 'fraud' as if configured ("1 trigger(s) of model fraud") while the database held only
model 'm' (tryout), and said "0 trigger(s) of model fraud" with no triggers at all."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from driftline.cli import main
from driftline.commands.serve import default_model_note

from kafka_service_support import wait_until
from procs import stop
from tcp_forwarder import free_port

EVENTS = (b'{"type":"prediction","prediction_id":"a1","model":"m","ts":"2026-12-01T00:00:00Z","score":0.9}\n'
          b'{"type":"outcome","prediction_id":"a1","label":1,"ts":"2026-12-02T00:00:00Z"}\n')
TRIGGER = 'triggers:\n  - {name: low_recall, metric: recall, op: "<", value: 0.5}\n'


def _start_line(tmp_path: Path, config_text: str, last: str = "windows end at") -> str:
    """What serve prints once `last` is printed (its start line, or the note after it), whitespace folded."""
    db = f"sqlite:///{tmp_path / 's.db'}"
    if not (tmp_path / "s.db").exists():
        (tmp_path / "ev.jsonl").write_bytes(EVENTS)
        assert main(["--db", db, "replay", str(tmp_path / "ev.jsonl")]) == 0
    config = tmp_path / "c.yaml"
    config.write_text(config_text)
    log = tmp_path / "serve.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "driftline.cli", "--config", str(config), "--db", db,
                                 "serve", "--port", str(free_port())], stdout=fh, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env={**os.environ, "COLUMNS": "200"})
    try:
        wait_until(lambda: last in " ".join(log.read_text().split()), 60, f"serve printing {last!r}")
    finally:
        stop(proc)
    return " ".join(log.read_text().split())


def test_serve_without_model_says_its_triggers_judge_the_default_model(tmp_path: Path) -> None:
    text = _start_line(tmp_path, "window: 7d\n" + TRIGGER, "they are for")
    assert "(model stored: m; 1 trigger(s) of the default model fraud (the config sets no `model:`)," in text, text
    assert "trigger(s) of model fraud" not in text
    assert ("note: the config sets no `model:`: its 1 trigger(s) judge the default model 'fraud', which has no "
            "stored predictions (the exporter serves every stored model: m)") in text, text
    text = _start_line(tmp_path, "window: 7d\n")
    assert "(model stored: m; no triggers, evaluate every" in text and "fraud" not in text, text
    text = _start_line(tmp_path, "model: m\n" + TRIGGER)
    assert "(model stored: m; 1 trigger(s) of model m," in text and "note:" not in text, text


def test_the_note_only_when_the_default_model_is_not_stored_but_others_are() -> None:
    assert default_model_note(1, "fraud", False, ["m"]) is not None
    assert default_model_note(1, "fraud", True, ["m"]) is None  # named: its own word (alerts validate checks it)
    assert default_model_note(0, "fraud", False, ["m"]) is None
    assert default_model_note(1, "fraud", False, ["fraud", "m"]) is None
    assert default_model_note(1, "fraud", False, []) is None  # nothing stored yet: nothing to point at
    assert default_model_note(1, "fraud", False, None) is None
