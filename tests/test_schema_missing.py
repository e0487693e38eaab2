"""A database recreated empty under a running exporter (SRE tryout: after DROP DATABASE and CREATE DATABASE,
/readyz kept saying "database ok; schema ready" while every /metrics scrape was a 500 with an UndefinedTable
traceback in the log): /readyz is 503 naming the missing schema, /metrics 503 with the database's error."""

from __future__ import annotations

import threading
import time

import pytest
from sqlalchemy import text

from http_probe import http_get
from driftline.config import Config
from driftline.exporter.collector import SnapshotCollector
from driftline.exporter.http import ExporterServer, build_registry
from driftline.storage.store import Store

from kafka_service_support import wait_until


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_an_emptied_database_is_not_ready_and_scrapes_say_why(tmp_path, request, kind: str) -> None:
    url = f"sqlite:///{tmp_path / 'e.db'}" if kind == "sqlite" else request.getfixturevalue("pg_url")
    store = Store(url)
    store.migrate()
    snapshot = SnapshotCollector(store, Config(model="m"), time.time, schema_ready=threading.Event())
    snapshot.schema_ready.set()
    server = ExporterServer(build_registry(snapshot, None), store, port=0)
    server.start()
    try:
        wait_until(lambda: http_get(server.url + "/readyz", timeout=20)[0] == 200, 30, "/readyz 200 on the migrated database")
        assert http_get(server.url + "/metrics", timeout=20)[0] == 200
        with store.write() as conn:  # as if dropped and created again, empty
            if kind == "sqlite":
                names = conn.execute(text("SELECT name FROM sqlite_master WHERE type = 'table'")).scalars().all()
                for name in names:
                    conn.execute(text(f'DROP TABLE "{name}"'))
            else:
                conn.execute(text("DROP SCHEMA public CASCADE"))
                conn.execute(text("CREATE SCHEMA public"))
        status, body = wait_until(lambda: (lambda r: r if r[0] == 503 else None)(http_get(server.url + "/readyz", timeout=20)), 30,
                                  "/readyz 503 after the schema went")
        assert "database schema missing" in body, body
        status, body = http_get(server.url + "/metrics", timeout=20)
        if kind == "postgresql":  # was a 500 and a traceback per scrape
            assert status == 503 and body.startswith("scrape failed: database error: "), (status, body)
        else:  # SQLite's "no such table" is an OperationalError: the collector's outage path (build info only)
            assert status == 200 and "driftline_recall" not in body, (status, body)
    finally:
        server.stop()
        store.close()
