"""Upgrading a database an older driftline wrote says so in one line on stderr, naming the revisions applied and
those recorded before (upgrade tryout: the first command of the new version migrated a production database in
silence, so an SRE could not tell whether, or by which command, it happened); a second command, and a new
database, say nothing."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, text

from driftline.cli import main

OLD_HEADS = ("0002", "0003", "0004", "0005", "0006_labels")
"""The heads a database written by driftline of 2026-12-01 06:00 (3e710fe) records."""


def _old_schema(url: str) -> str:
    """A database migrated only as far as the older build did."""
    import driftline.storage.store as store_module

    cfg = Config()
    cfg.set_main_option("script_location", str(Path(store_module.__file__).parent / "migrations"))
    cfg.set_main_option("sqlalchemy.url", url)
    for head in OLD_HEADS:
        command.upgrade(cfg, head)
    return url


def _stored(url: str) -> set[str]:
    engine = create_engine(url)
    with engine.connect() as conn:
        found = {r[0] for r in conn.execute(text("SELECT version_num FROM alembic_version"))}
    engine.dispose()
    return found


@pytest.fixture(params=["sqlite", "postgres"])
def old_db(request, tmp_path) -> str:
    url = f"sqlite:///{tmp_path / 'old.db'}" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    return _old_schema(url)


def _notes(caplog) -> list[str]:
    found = [r.getMessage() for r in caplog.records
             if r.name == "driftline.storage" and r.levelno == logging.WARNING and "migrated" in r.getMessage()]
    caplog.clear()
    return found


def test_the_migrating_command_names_what_it_applied_once(old_db: str, caplog) -> None:
    assert _stored(old_db) == set(OLD_HEADS)
    assert main(["--db", old_db, "metrics", "--json"]) == 0
    lines = _notes(caplog)
    assert len(lines) == 1, lines
    assert "applied 0008_seasonal, 0009_mvsample, 0010_joinpack, 0011_pgfill, 0012_labelsapart" in lines[0]
    assert "recorded before: 0002, 0003, 0004, 0005, 0006_labels" in lines[0]
    assert main(["--db", old_db, "metrics", "--json"]) == 0
    assert _notes(caplog) == []


def test_a_new_database_is_created_without_the_note(tmp_path, caplog) -> None:
    url = f"sqlite:///{tmp_path / 'new.db'}"
    events = tmp_path / "e.jsonl"
    events.write_text("")
    assert main(["--db", url, "replay", str(events), "--json"]) == 0
    assert _notes(caplog) == []
