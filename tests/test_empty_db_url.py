"""An empty database URL given on purpose (`--db ""`, `database: ""`) is refused, as an empty --config is: it was
read as no URL at all, so `--db "$DB_URL"` with the variable unset replayed into ./driftline.db silently. An empty
DRIFTLINE_DB still counts as unset (README: a variable set but empty counts as unset)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from driftline.cli import main

LINE = ("give a database URL (sqlite:///PATH or postgresql+psycopg://USER@HOST/DB), or leave ")


@pytest.mark.parametrize("flag", ["", " "])
def test_an_empty_db_option_is_refused_and_nothing_is_written(tmp_path: Path, capsys, monkeypatch, flag: str) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    events = tmp_path / "e.jsonl"
    assert main(["--db", f"sqlite:///{tmp_path / 'x.db'}", "simulate", "--days", "0.01", "--out", str(events)]) == 0
    capsys.readouterr()
    assert main(["--db", flag, "replay", str(events)]) == 2
    assert capsys.readouterr().err.replace("\n", "").split() == (
        f"error: --db: empty: {LINE}it out for the default sqlite:///driftline.db").split()
    assert not (tmp_path / "driftline.db").exists()


def test_an_empty_database_setting_is_refused_at_load(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    config = tmp_path / "c.yaml"
    config.write_text('database: ""\n')
    assert main(["--config", str(config), "metrics"]) == 2
    assert "line 1: invalid field `database`: empty: " + LINE in capsys.readouterr().err.replace("\n", "")


def test_an_empty_variable_still_counts_as_unset(tmp_path: Path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setitem(os.environ, "DRIFTLINE_DB", "")
    monkeypatch.chdir(tmp_path)
    assert main(["metrics"]) == 2
    assert "no database at" in capsys.readouterr().err
