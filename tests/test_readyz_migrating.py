"""/readyz while the process itself migrates the schema (on-call tryout: a first `driftline run` against an empty
PostgreSQL database answered 503 "database schema missing (recreated empty? restart driftline to migrate it)" for
~2 s while it was migrating: at 3 a.m. that tells the on-call to restart a process that is fine). Now it says the
schema is being migrated, turns ready once the migration commits, and a schema dropped afterwards still reads
"schema missing … restart" (tests/test_schema_missing.py)."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from http_probe import http_get
from driftline.config import Config
from driftline.service.process import Service
from driftline.storage.store import Store

from kafka_service_support import wait_until

pytestmark = pytest.mark.postgres


def _readyz_503(url: str) -> str | None:
    status, body = http_get(url + "/readyz", timeout=20)
    return body if status == 503 else None


def test_readyz_says_the_schema_is_being_migrated_not_restart(pg_url: str) -> None:
    store = Store(pg_url)
    service = Service(Config(model="m"), store, port=0, evaluate=False)
    service.start_exporter()  # as `run` does: the exporter answers before the migration starts
    try:
        body = wait_until(lambda: _readyz_503(service.url), 30, "/readyz 503 on the empty database")
        assert body.startswith("database schema being migrated by this process"), body
        assert "restart" not in body, body
        store.migrate()
        service.start_jobs()  # what `run` calls once the migration committed
        wait_until(lambda: http_get(service.url + "/readyz", timeout=20)[0] == 200, 30, "/readyz 200 once migrated")
        with store.write() as conn:  # the real case: tables gone under a running, migrated process
            conn.execute(text("DROP SCHEMA public CASCADE"))
            conn.execute(text("CREATE SCHEMA public"))
        body = wait_until(lambda: _readyz_503(service.url), 30, "/readyz 503 after the schema went")
        assert body.startswith("database schema missing (recreated empty? restart driftline to migrate it)"), body
    finally:
        service.stop()
        store.close()


def test_readyz_while_migrating_says_what_the_migration_waits_for(pg_url: str) -> None:
    """SRE tryout: a first `run` against an empty database whose write lock another session held answered only
    "database schema being migrated by this process … not ready until the migration commits" for minutes; the
    holder (the session to end) was named in the log alone. Now /readyz adds the wait `run` reports."""
    store = Store(pg_url)
    waiting = "kafka waiting for the database: another driftline writer held the database write lock for more " \
              "than 10s (held by PostgreSQL session pid 4242 (application_name 'etl', …))"
    service = Service(Config(model="m"), store, port=0, evaluate=False, readiness=lambda: (False, waiting))
    service.start_exporter()
    try:
        body = wait_until(lambda: _readyz_503(service.url), 30, "/readyz 503 on the empty database")
        assert body.startswith("database schema being migrated by this process"), body
        assert "pid 4242 " in body and "application_name 'etl'" in body, body
    finally:
        service.stop()
        store.close()
