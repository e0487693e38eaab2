"""The Alembic migrations are found where the package keeps them (storage/migrations) and build the schema from
an empty database with alembic's own command line, on SQLite and PostgreSQL."""

from __future__ import annotations

import subprocess
import sys
from importlib.resources import files

import pytest
from sqlalchemy import create_engine, inspect

from driftline.storage.schema import metadata
from driftline.storage.store import Store


@pytest.fixture(params=["sqlite", "postgres"])
def empty_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'empty.db'}"
    return request.getfixturevalue("pg_url")


def test_migrations_ship_inside_the_storage_package():
    where = files("driftline.storage") / "migrations"
    assert (where / "env.py").is_file()
    assert len([p for p in (where / "versions").iterdir() if p.name.endswith(".py")]) >= 5


def test_alembic_upgrade_head_from_an_empty_database(empty_url, tmp_path):
    ini = tmp_path / "alembic.ini"
    location = files("driftline.storage") / "migrations"
    ini.write_text(f"[alembic]\nscript_location = {location}\nsqlalchemy.url = {empty_url.replace('%', '%%')}\n")
    proc = subprocess.run([sys.executable, "-m", "alembic", "-c", str(ini), "upgrade", "heads"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    engine = create_engine(empty_url)
    try:
        tables = set(inspect(engine).get_table_names())
    finally:
        engine.dispose()
    assert set(metadata.tables) <= tables
    Store(empty_url).migrate()  # and the store's own upgrade then finds nothing left to do
