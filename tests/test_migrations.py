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


def _upgrade_to(url: str, targets: list[str]) -> None:
    from alembic import command
    from alembic.config import Config as AlembicConfig

    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(files("driftline.storage") / "migrations"))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    for target in targets:
        command.upgrade(cfg, target)


def _join_rows(store: Store) -> tuple[list[tuple], list[tuple]]:
    with store.read() as conn:
        return (sorted(tuple(r) for r in conn.exec_driver_sql("SELECT * FROM predictions")),
                sorted(tuple(r) for r in conn.exec_driver_sql("SELECT * FROM outcomes")))


def test_joinpack_upgrade_keeps_every_join_row_and_drops_the_rowid(tmp_path):
    """0010_joinpack on a SQLite database written at the previous heads: every prediction and outcome row is
    kept as it was, the join tables lose their rowid, and ingestion goes on into the converted tables."""
    from driftline.config import from_dict
    from driftline.ingest.pipeline import Pipeline, RawRecord
    from driftline.storage import revisions

    from helpers import outcome, pred

    url = f"sqlite:///{tmp_path / 'old.db'}"
    _upgrade_to(url, sorted(revisions.script_heads() - {"0010_joinpack"}))
    store = Store(url)
    assert not store.schema_is_current()
    t0 = 1_767_225_600.0
    raws = [pred(f"tx-{i}", i / 50, t0 + i, features={"country": "DE" if i % 3 else "FR"}) for i in range(40)]
    raws += [outcome(f"tx-{i}", i % 2, t0 + 100 + i) for i in range(0, 40, 2)] + [outcome("early", 1, t0 + 5)]
    config = from_dict({"slices": ["country"]})
    pipe = Pipeline(config, store, clock=lambda: t0 + 1000)
    pipe.process_batch([RawRecord("f", 0, i, r) for i, r in enumerate(raws)])
    before = _join_rows(store)
    assert len(before[0]) == 40 and len(before[1]) == 21
    store.migrate()
    assert store.schema_is_current() and _join_rows(store) == before
    with store.read() as conn:
        ddl = dict(conn.exec_driver_sql("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall())
        indexes = {r[0] for r in conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert ddl["predictions"].rstrip().endswith("WITHOUT ROWID") and ddl["outcomes"].rstrip().endswith("WITHOUT ROWID")
    assert {"ix_predictions_shard_ts", "ix_outcomes_shard_ts"} <= indexes
    assert all(r[-1] is not None for r in before[0])  # slice values survive the copy too
    pipe = Pipeline(config, store, clock=lambda: t0 + 1000)
    pipe.process_batch([RawRecord("f", 0, 100, outcome("tx-1", 1, t0 + 300)), RawRecord("f", 0, 101, raws[0])])
    preds, outs = _join_rows(store)
    assert len(preds) == 40 and len(outs) == 22
    store.close()


def test_joinpack_before_the_slices_migration_keeps_both(tmp_path):
    """Sibling branches run in any order: 0010_joinpack first, then 0002 adds slice_values to the rebuilt table,
    which stays without a rowid, and the store finds its schema current."""
    url = f"sqlite:///{tmp_path / 'order.db'}"
    _upgrade_to(url, ["0010_joinpack"])
    store = Store(url)
    store.migrate()
    with store.read() as conn:
        ddl = conn.exec_driver_sql("SELECT sql FROM sqlite_master WHERE name = 'predictions'").scalar_one()
    assert "slice_values" in ddl and ddl.rstrip().endswith("WITHOUT ROWID") and store.schema_is_current()
    store.close()


def test_a_database_stamped_by_the_joinpack_dependency_build_upgrades(empty_url):
    """e9a095d's 0010_joinpack named 0002 in depends_on, so Alembic stored 0010 in place of 0002: such a database
    holds slice_values but not revision 0002, and the next upgrade ran 0002 again ('database unavailable: duplicate
    column name: slice_values', exit 3; run and serve retried it forever). 0002 now finds its column and only
    records itself (SRE upgrade tryout)."""
    from sqlalchemy import text

    from driftline.storage import revisions

    store = Store(empty_url)
    store.migrate()
    with store.write() as conn:
        conn.execute(text("INSERT INTO predictions (prediction_id, model, variant, model_version, ts, score, flagged,"
                          " shard, implicit, slice_values) VALUES ('p', 'm', 'v', '1', 1.0, 0.5, false, 0, false,"
                          " '{\"country\": \"DE\"}')"))
        conn.execute(text("DELETE FROM alembic_version WHERE version_num = '0002'"))  # as e9a095d left it
    assert not store.schema_is_current()
    before = _join_rows(store)
    store.migrate()
    with store.read() as conn:
        stored = revisions.stored_revisions(conn)
    assert stored == revisions.script_heads() and _join_rows(store) == before
    store.close()
