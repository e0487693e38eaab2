"""SQLite for tests: the join tables' CREATE statements as the real migrations leave them, for tests that rebuild
those tables in scratch databases (old route against new on the same schema); a database file migrated once per
session, for property tests that need a fresh migrated database per example (migrating one takes ~50 ms of CPU)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from driftline.storage.store import Store


@pytest.fixture(scope="module")
def join_schema(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """CREATE statements of `predictions`, `outcomes` and their indexes, from a database migrated by the real
    migrations (tables first)."""
    path = tmp_path_factory.mktemp("schema") / "s.db"
    store = Store(f"sqlite:///{path}")
    store.migrate()
    with store.read() as conn:
        sql = [r[0] for r in conn.exec_driver_sql(
            "SELECT sql FROM sqlite_master WHERE tbl_name IN ('predictions', 'outcomes') AND sql IS NOT NULL "
            "ORDER BY type DESC, name")]
    store.close()
    assert any("WITHOUT ROWID" in s for s in sql) and any("ix_predictions_shard_ts" in s for s in sql)
    return sql


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite database file migrated by the real migrations and closed; copy it with `migrated_copy`, never
    write to it."""
    path = tmp_path_factory.mktemp("migrated") / "template.db"
    store = Store(f"sqlite:///{path}")
    store.migrate()
    store.close()
    assert not path.with_name("template.db-wal").exists()  # closed: the one file holds the whole database
    return path


def migrated_copy(template: Path, path: Path) -> Store:
    """A Store on a copy of `template` at `path`, migrate() run on it (it finds the schema current)."""
    shutil.copyfile(template, path)
    store = Store(f"sqlite:///{path}")
    store.migrate()
    return store
