"""A read-only command on a SQLite file that does not exist exits 2 with one line and creates nothing (user
tryout: a mistyped --db created a 139 KB file and said "no predictions stored yet"); writers still create it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from driftline.cli import main
from driftline.storage.urls import sqlite_file

from helpers import pred

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z

READERS = [["metrics"], ["drift"], ["calibration"], ["slices"], ["ab"], ["dead-letters"], ["report"], ["alerts"],
           ["alerts", "validate"], ["alerts", "evaluate"], ["reference", "list"], ["reference", "show"],
           ["reference", "activate", "1"], ["reference", "set", "--from", "2026-01-01", "--to", "2026-01-02"]]


@pytest.mark.parametrize("command", READERS, ids=" ".join)
def test_a_reader_refuses_a_missing_sqlite_file_and_creates_nothing(tmp_path: Path, capsys, command) -> None:
    path = tmp_path / "new.db"
    assert main(["--db", f"sqlite:///{path}", *command]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    assert cap.err.splitlines() == [f"error: no database at {path} (--db sqlite:///{path}); commands that write — "
                                    "replay, run, demo, serve — create it"]
    assert not path.exists()


def test_the_default_relative_file_is_named_by_its_absolute_path(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DRIFTLINE_DB", raising=False)
    assert main(["metrics"]) == 2
    assert capsys.readouterr().err == (f"error: no database at {tmp_path / 'driftline.db'} (the default --db "
                                       f"sqlite:///driftline.db, relative to {tmp_path}); commands that write — "
                                       "replay, run, demo, serve — create it\n")
    assert not (tmp_path / "driftline.db").exists()


@pytest.mark.parametrize("given, said", [
    (["--db", "sqlite:///typo.db"], "--db sqlite:///typo.db"),
    (["--env"], "env DRIFTLINE_DB=sqlite:///typo.db"),
    (["--config", "c.yaml"], "config `database: sqlite:///typo.db`"),
], ids=["--db", "DRIFTLINE_DB", "config"])
def test_the_missing_database_line_says_where_the_url_came_from(tmp_path: Path, capsys, monkeypatch, given,
                                                                said) -> None:
    """Tryout: the line named neither --db / DRIFTLINE_DB / the default nor the folder a relative path is in."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DRIFTLINE_DB", raising=False)
    (tmp_path / "c.yaml").write_text("database: sqlite:///typo.db\n")
    if given == ["--env"]:
        monkeypatch.setenv("DRIFTLINE_DB", "sqlite:///typo.db")
        given = []
    assert main([*given, "metrics"]) == 2
    assert capsys.readouterr().err == (f"error: no database at {tmp_path / 'typo.db'} ({said}, relative to "
                                       f"{tmp_path}); commands that write — replay, run, demo, serve — create it\n")


def test_writers_still_create_the_database(tmp_path: Path, capsys) -> None:
    events = tmp_path / "e.jsonl"
    events.write_bytes(pred("p1", 0.9, T0) + b"\n")
    assert main(["--db", f"sqlite:///{tmp_path / 'r.db'}", "replay", str(events)]) == 0
    assert (tmp_path / "r.db").exists()
    # a reference from a file before go-live: the database need not exist yet
    assert main(["--db", f"sqlite:///{tmp_path / 'f.db'}", "reference", "set", "--model", "fraud", "--file",
                 str(events)]) == 0
    assert (tmp_path / "f.db").exists()
    capsys.readouterr()
    assert main(["--db", f"sqlite:///{tmp_path / 'r.db'}", "metrics"]) == 0  # an existing database is read


def test_only_sqlite_files_are_checked() -> None:
    assert sqlite_file("postgresql://u@db.example/driftline") is None  # PostgreSQL: never checked nor created
    assert sqlite_file("sqlite://") is None and sqlite_file("sqlite:///:memory:") is None
    assert sqlite_file("sqlite:///file:x.db?mode=ro&uri=true") is None
    assert sqlite_file("sqlite:////tmp/x.db") == "/tmp/x.db"


def test_an_option_error_is_reported_before_the_missing_database(tmp_path: Path, capsys) -> None:
    """The missing file is found when the store is first opened: an option checked before is named instead."""
    db = ["--db", f"sqlite:///{tmp_path / 'new.db'}"]
    assert main([*db, "reference", "set", "--from", "bogus", "--to", "2026-01-15"]) == 2
    assert "--from: cannot parse 'bogus'" in capsys.readouterr().err
    assert not (tmp_path / "new.db").exists()


@pytest.mark.parametrize("command", ["metrics", "calibration", "slices"])
def test_an_empty_database_says_nothing_is_stored_not_1970(tmp_path: Path, capsys, monkeypatch, command) -> None:
    """calibration and slices printed the window '1969-12-25T00:00:00Z → 1970-01-01T00:00:00Z' (user tryout)."""
    monkeypatch.setenv("COLUMNS", "300")
    (tmp_path / "none.jsonl").write_bytes(b"")
    db = ["--db", f"sqlite:///{tmp_path / 'empty.db'}"]
    assert main([*db, "replay", str(tmp_path / "none.jsonl")]) == 0
    capsys.readouterr()
    assert main([*db, command]) == 0
    out = capsys.readouterr().out
    assert out.startswith("fraud: no predictions stored yet (feed events with `driftline replay`") and "19" not in out
    assert main([*db, command, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["window"]["start"] is None and doc["window"]["end"] is None
    assert doc["note"].startswith("no predictions stored yet")


@pytest.mark.parametrize("command", [["metrics"], ["replay", "-"], ["serve", "--port", "0"]])
def test_a_path_that_is_a_directory_or_not_a_database_is_one_error_line(tmp_path, capsys, command) -> None:
    """Second tryout: a directory gave 'database unavailable' (exit 3) and `serve` retried it forever; a file that
    is not a database ended in 'unexpected DatabaseError: … file is not a database\\x0a(Background …)' (exit 1)."""
    (tmp_path / "dir").mkdir()
    text = tmp_path / "events.jsonl"
    text.write_text('{"type": "prediction"}\n' * 200)
    for path, said in ((tmp_path / "dir", "is a directory, not a SQLite database file"),
                       (text, "is not a SQLite database (a wrong --db path?)")):
        assert main(["--db", f"sqlite:///{path}", *command]) == 2
        err = " ".join(capsys.readouterr().err.split())
        assert err == f"error: {path} {said}"
