"""A database dropped and recreated empty under a running process is an outage named as such, not a crash (SRE
tryout: `drop database … with (force)` + `create database` under two `run` processes: both exited with "error:
unexpected ProgrammingError: relation "positions" does not exist" instead of /readyz 503 "database schema missing
(recreated empty? restart driftline to migrate it)" as README promises; the batch is now held and retried)."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, text

from driftline.storage.errors import SchemaMissing
from driftline.storage.store import Store

pytestmark = pytest.mark.postgres


def test_tables_gone_under_a_migrated_store_read_as_schema_missing(pg_url: str) -> None:
    store = Store(pg_url)
    try:
        store.migrate()
        assert store.positions("kafka:p") == {}
        engine = create_engine(pg_url)
        with engine.begin() as conn:  # what a drop and recreate leaves: the server, no tables
            conn.execute(text("DROP SCHEMA public CASCADE"))
            conn.execute(text("CREATE SCHEMA public"))
        engine.dispose()
        for call in (lambda: store.positions("kafka:p"), lambda: store.counters()):
            with pytest.raises(SchemaMissing, match=r"^database schema missing \(recreated empty\? restart "
                                                       r"driftline to migrate it\): .*does not exist"):
                call()
    finally:
        store.close()
