"""The note of a window with fewer than 30 labelled predictions tells the truth (user tryout: "labels for this
window have not arrived yet (6 of 6 predictions labelled)" when every label had arrived)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from driftline.cli import main

from helpers import outcome, pred

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def _db(tmp_path: Path, labelled: int, predictions: int = 6) -> list[str]:
    """--db of `predictions` predictions a minute apart, the first `labelled` of them labelled an hour later."""
    lines = [pred(f"p{i}", 0.9 if i < 2 else 0.1, T0 + 60 * i) for i in range(predictions)]
    lines += [outcome(f"p{i}", int(i < 3), T0 + 3600 + 60 * i) for i in range(labelled)]
    (tmp_path / "e.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    db = ["--db", f"sqlite:///{tmp_path / 'd.db'}"]
    assert main([*db, "replay", str(tmp_path / "e.jsonl")]) == 0
    return db


def _note(capsys: pytest.CaptureFixture[str], db: list[str], *extra: str) -> str:
    capsys.readouterr()
    assert main([*db, "metrics", "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)["label_maturity"]["note"]


def test_a_small_window_with_every_label_says_it_is_small_not_late(tmp_path, capsys, monkeypatch) -> None:
    db = _db(tmp_path, labelled=6)
    note = _note(capsys, db)
    assert note == ("only 6 predictions in this window, all labelled: fewer than 30 labelled make every rate "
                    "indicative (*); a longer `--window` holds more")
    monkeypatch.setenv("COLUMNS", "300")
    assert main([*db, "metrics"]) == 0
    out = capsys.readouterr().out
    assert "not arrived" not in out and "note: only 6 predictions in this window, all labelled" in out


def test_a_window_with_some_labels_says_not_all_arrived(tmp_path, capsys) -> None:
    note = _note(capsys, _db(tmp_path, labelled=4))
    assert note.startswith("labels for this window have not all arrived yet (4 of 6 predictions labelled; even "
                           "all 6 would be fewer than 30): median label delay")


def test_an_old_window_short_of_labels_says_some_did_not_arrive(tmp_path, capsys) -> None:
    """A window ended long before the newest event (matured) whose labels are missing: 'some did not', not 'few
    did' (which 5 of 6 is not)."""
    lines = [pred(f"p{i}", 0.1, T0 + 60 * i) for i in range(6)]
    lines += [outcome(f"p{i}", 0, T0 + 600 + 60 * i) for i in range(5)]
    lines += [pred("late", 0.1, T0 + 30 * 86400)]
    (tmp_path / "e.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    db = ["--db", f"sqlite:///{tmp_path / 'd.db'}"]
    assert main([*db, "replay", str(tmp_path / "e.jsonl")]) == 0
    note = _note(capsys, db, "--at", "2026-01-02T00:00:00Z", "--window", "1d")
    assert note.startswith("this window's labels should have arrived but some did not (5 of 6 predictions labelled")
