"""A migration statement the database refuses (a schema changed by hand, a partial restore: here the table that
0006_labels creates is already there while its revision is not recorded) is one line naming the revision being
applied, exit 2, nothing changed — not `database unavailable` (exit 3) retried forever by `run`/`serve` (upgrade
tryout). An outage while migrating stays StoreUnavailable (retried)."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from driftline.cli import main
from driftline.storage.errors import MigrationFailed
from driftline.storage.revisions import refused_statement
from driftline.storage.store import Store

from helpers import migrated_then

PENDING = "0006_labels"


@pytest.fixture(params=["sqlite", "postgres"])
def hand_changed(request, tmp_path) -> str:
    """A current database whose record of 0006_labels was lost while its table stayed."""
    url = f"sqlite:///{tmp_path / 'd.db'}" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    return migrated_then(url, "DELETE FROM alembic_version WHERE version_num = :v", v=PENDING)


def _versions(url: str) -> list[str]:
    engine = create_engine(url)
    with engine.connect() as conn:
        found = sorted(r[0] for r in conn.execute(text("SELECT version_num FROM alembic_version")))
    engine.dispose()
    return found


def test_a_refused_migration_statement_is_migration_failed_and_changes_nothing(hand_changed: str) -> None:
    before = _versions(hand_changed)
    with pytest.raises(MigrationFailed) as raised:
        Store(hand_changed).migrate()
    message = str(raised.value)
    assert f"applying {PENDING}" in message and "admitted_labels" in message and "Nothing was changed" in message
    assert _versions(hand_changed) == before


@pytest.mark.parametrize("argv", [["metrics", "--json"], ["serve", "--port", "0"]], ids=lambda a: a[0])
def test_commands_stop_with_one_line_exit_2(hand_changed: str, argv: list[str], capsys) -> None:
    assert main(["--db", hand_changed, *argv]) == 2  # serve retried it forever as 'database unavailable'
    err = capsys.readouterr().err
    assert err.startswith("error: migrating the database schema failed") and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("message", ["database is locked", "disk I/O error", "database or disk is full"])
def test_sqlite_outages_while_migrating_stay_outages(message: str) -> None:
    err = OperationalError("ALTER TABLE x ADD COLUMN y", {}, Exception(message))
    assert not refused_statement("sqlite", err)
    assert refused_statement("sqlite", OperationalError("CREATE TABLE t", {}, Exception("table t already exists")))
    assert not refused_statement("postgresql", OperationalError("CREATE TABLE t", {}, Exception("server closed")))
