"""SQLite's page cache: a write transaction's connection gets `storage.sqlite_cache_mb` (issue 18: a replay batch
touches thousands of join-table and bucket pages, which the default 2 MB cache evicted and read back within the
batch); a read keeps SQLite's default, and a connection returned to the pool goes back to it, so the pooled readers
of `run` and `serve` (a /metrics scrape reads hundreds of bucket blobs) never hold the larger cache."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from driftline import config
from driftline.config import ConfigError, from_dict
from driftline.context import Context
from driftline.storage import locking
from driftline.storage.store import Store

SQLITE_DEFAULT_KIB = -2000
"""SQLite's own default cache_size (2,048,000 bytes)."""


def _cache(conn: object) -> int:
    return conn.exec_driver_sql("PRAGMA cache_size").scalar()  # type: ignore[attr-defined]


def _dbapi(conn: object) -> object:
    return conn.connection.dbapi_connection  # type: ignore[attr-defined]


def test_a_write_transaction_has_the_larger_cache_and_a_read_the_default(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'd.db'}")
    store.migrate()
    try:
        with store.write() as conn:
            assert _cache(conn) == -16 * 1024
            written_on = _dbapi(conn)
        with store.read() as conn:
            assert _dbapi(conn) is written_on  # the same pooled connection, which just wrote
            assert _cache(conn) == SQLITE_DEFAULT_KIB
        with store.write() as conn:  # and back again
            assert _dbapi(conn) is written_on
            assert _cache(conn) == -16 * 1024
    finally:
        store.close()


def test_a_connection_back_in_the_pool_keeps_no_write_cache(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'd.db'}", sqlite_cache_mb=4)
    store.migrate()
    try:
        with store.write() as conn:
            assert _cache(conn) == -4 * 1024
            written_on = _dbapi(conn)
        raw = store.engine.raw_connection()  # a checkout begins no transaction: the cache as the pool left it
        try:
            assert raw.dbapi_connection is written_on
            assert raw.dbapi_connection.execute("PRAGMA cache_size").fetchone()[0] == SQLITE_DEFAULT_KIB
        finally:
            raw.close()
    finally:
        store.close()


def test_the_cli_store_takes_the_config_setting(tmp_path: Path) -> None:
    cfg = from_dict({"storage": {"sqlite_cache_mb": 48}})
    ctx = Context(config=cfg, db_url=f"sqlite:///{tmp_path / 'd.db'}", console=Console(file=io.StringIO()),
                  err=Console(file=io.StringIO()))
    try:
        with ctx.store().write() as conn:
            assert _cache(conn) == -48 * 1024
        with ctx.store().read() as conn:
            assert _cache(conn) == SQLITE_DEFAULT_KIB
    finally:
        ctx.close()


def test_the_default_is_the_stores() -> None:
    assert config.Config().storage.sqlite_cache_mb == locking.WRITE_CACHE_MB == 16


@pytest.mark.parametrize("value, says", [(0, ">= 1"), (2048, "<= 1024"), (1.5, "not a whole number"),
                                         ("16MB", "Expected `int`")])
def test_a_bad_value_names_the_field(value: object, says: str) -> None:
    with pytest.raises(ConfigError, match=r"storage\.sqlite_cache_mb") as err:
        from_dict({"storage": {"sqlite_cache_mb": value}})
    assert says in str(err.value)
