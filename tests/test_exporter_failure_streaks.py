"""Scrapes and snapshots that keep failing are logged by streak (database-fault tryout: with a table locked for 75 s
the exporter logged 25 warnings, one per scrape and per snapshot, against the consumer's 3): the first failure, a
reminder every 300 s with the count, and the recovery."""

from __future__ import annotations

import logging
import urllib.error
import urllib.request
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from driftline.config import from_dict
from driftline.exporter.collector import SnapshotCollector
from driftline.exporter.dbstate import ScrapeTimeout
from driftline.exporter.http import ExporterServer
from driftline.storage.errors import StoreUnavailable
from driftline.storage.store import Store


def _warnings(caplog: Any) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_snapshots_skipped_for_an_outage_are_logged_once_then_the_recovery(tmp_path, monkeypatch, caplog) -> None:
    store = Store(f"sqlite:///{tmp_path / 'd.db'}")
    store.migrate()
    collector = SnapshotCollector(store, from_dict({"model": "m"}), cache_s=0.0)
    real = store.models

    def down() -> Any:
        raise StoreUnavailable("connection refused\nhint: is the server running?")

    monkeypatch.setattr(store, "models", down)
    with caplog.at_level(logging.WARNING, logger="driftline.exporter.collector"):
        for _ in range(6):
            collector.snapshot()
        monkeypatch.setattr(store, "models", real)
        collector.snapshot()
    lines = _warnings(caplog)
    assert len(lines) == 2, lines
    assert lines[0].startswith("metrics snapshot failed: database unavailable: connection refused (logged again")
    assert lines[1].startswith("metrics snapshot succeeded again after 6 failed attempts")
    store.close()


def test_failed_scrapes_are_logged_once_then_the_recovery(tmp_path, monkeypatch, caplog) -> None:
    store = Store(f"sqlite:///{tmp_path / 'd.db'}")
    store.migrate()
    server = ExporterServer(CollectorRegistry(), store, port=0)
    real = server.scrape

    def slow(encoder: Any) -> bytes:
        raise ScrapeTimeout("scrape did not finish within 8s (waiting for an earlier scrape)")

    monkeypatch.setattr(server, "scrape", slow)
    server.start()
    try:
        with caplog.at_level(logging.WARNING, logger="driftline.exporter.http"):
            for _ in range(4):
                with pytest.raises(urllib.error.HTTPError) as failed:
                    urllib.request.urlopen(f"{server.url}/metrics", timeout=10)
                assert failed.value.code == 503
            monkeypatch.setattr(server, "scrape", real)
            assert urllib.request.urlopen(f"{server.url}/metrics", timeout=10).status == 200
        lines = _warnings(caplog)
        assert len(lines) == 2, lines
        assert lines[0].startswith("scrape failed: scrape did not finish within 8s")
        assert lines[1].startswith("scrape succeeded again after 4 failed attempts")
    finally:
        server.stop()
        store.close()
