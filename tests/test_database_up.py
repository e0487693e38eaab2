"""SRE tryout: two replicas whose PostgreSQL refused connections kept answering /metrics 200 while every series
read from the database vanished (441 → 101 lines), `up` stayed 1 and nothing said "database down" (only /readyz,
which Prometheus does not scrape). Every replica now exports driftline_database_up in every scrape: 1, then 0
while the forwarder to PostgreSQL is stopped, then 1 again (alerts/meta.rules.yml: DriftlineDatabaseUnreachable)."""

from __future__ import annotations

import threading
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from http_probe import http_get
from driftline.config import Config
from driftline.exporter.collector import SnapshotCollector
from driftline.exporter.http import ExporterServer, build_registry
from driftline.storage.store import Store

from kafka_service_support import wait_until

pytestmark = pytest.mark.postgres


def _scrape(server: ExporterServer) -> dict[str, float] | None:
    """name → value of the unlabelled and first samples of a 200 scrape (None for any other answer)."""
    status, body = http_get(server.url + "/metrics")
    if status != 200:
        return None
    return {s.name: s.value for fam in text_string_to_metric_families(body) for s in reversed(fam.samples)}


def _exporter(store: Store, leading: bool) -> ExporterServer:
    ready = threading.Event()
    ready.set()
    snapshot = SnapshotCollector(store, Config(model="m"), time.time, schema_ready=ready, cache_s=0.0,
                                 leader=lambda: leading)
    return ExporterServer(build_registry(snapshot, None), store, port=0, stall_s=5.0, scrape_timeout_s=5.0)


def test_database_up_is_exported_by_leader_and_standby_and_follows_an_outage(pg_behind_forwarder) -> None:
    pg = pg_behind_forwarder
    stores = [Store(pg.url), Store(pg.url)]
    stores[0].migrate()
    leader, standby = _exporter(stores[0], True), _exporter(stores[1], False)
    servers = (leader, standby)
    for server in servers:
        server.start()
    try:
        for server in servers:
            wait_until(lambda: (_scrape(server) or {}).get("driftline_database_up") == 1.0, 30, "database_up 1")
        assert "driftline_events_total" in _scrape(leader)  # a series read from the database, on the leader only
        assert "driftline_events_total" not in _scrape(standby)

        pg.forwarder.stop()  # connection refused: the scrape still answers 200, the series read vanish
        for server in servers:
            down = wait_until(lambda: (lambda s: s if s and s.get("driftline_database_up") == 0.0 else None)(
                _scrape(server)), 30, "database_up 0 while the forwarder is stopped")
            assert "driftline_events_total" not in down and down["driftline_build_info"] == 1.0
        assert http_get(leader.url + "/readyz")[0] == 503

        pg.forwarder.start()
        for server in servers:
            wait_until(lambda: (_scrape(server) or {}).get("driftline_database_up") == 1.0, 30,
                       "database_up 1 again after the forwarder restarted")
        wait_until(lambda: "driftline_events_total" in (_scrape(leader) or {}), 30, "the leader's series back")
    finally:
        pg.forwarder.start()
        for server in servers:
            server.stop()
        for store in stores:
            store.close()
