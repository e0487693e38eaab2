"""Several replicas starting together on a fresh database (issue 14 part 6): migrations are serialised (the
store's write lock), and nothing (scrapes, trigger evaluation, the weekly-report catch-up) runs before they end."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from kafka_fixtures import create_topics, unique_name
from kafka_service_support import start_service, wait_until, write_config
from tcp_forwarder import free_port

from driftline.config import from_dict
from driftline.service.process import Service
from driftline.storage.store import Store

TRIGGERS = [{"name": "recall_low", "metric": "recall", "op": "<", "value": 0.7, "window": "7d"}]


def _clean(log: str) -> None:
    assert "Traceback" not in log, log
    assert " ERROR " not in log and "ERROR:" not in log, log
    assert "database unavailable" not in log, log
    assert "failed" not in log, log


def test_two_serve_replicas_migrate_a_fresh_postgres_together(pg_url: str, tmp_path: Path) -> None:
    """Two `driftline serve` started at the same instant on an empty database both migrate and serve, with no
    error in their logs, and the weekly-report catch-up runs (on the leader) instead of failing."""
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"triggers": TRIGGERS, "schedule": {"report_dir": str(tmp_path / "r")}}))
    procs, logs = [], []
    go = threading.Barrier(2)

    def start(i: int) -> None:
        log = tmp_path / f"serve-{i}.log"
        logs.append(log)
        go.wait()
        with open(log, "wb") as fh:
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "driftline.cli", "--log-level", "INFO", "--config", str(config), "--db",
                 pg_url, "serve", "--port", str(free_port())], stdout=fh, stderr=subprocess.STDOUT))

    threads = [threading.Thread(target=start, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        wait_until(lambda: all("driftline serve:" in p.read_text() for p in logs), 60, "both replicas serving")
        wait_until(lambda: any("job weekly_report: skipped" in p.read_text() for p in logs), 30,
                   "the catch-up weekly report ran on the leader")
    finally:
        for p in procs:
            p.send_signal(signal.SIGINT)
        codes = [p.wait(timeout=30) for p in procs]
    for p in logs:
        _clean(p.read_text())
    assert codes == [0, 0]


@pytest.mark.kafka
def test_two_run_replicas_start_together_on_a_fresh_postgres(kafka_bootstrap: str, pg_url: str,
                                                            tmp_path: Path) -> None:
    """Two `driftline run` on a fresh PostgreSQL database: no duplicate-key migration error, no scrape or catch-up
    job before the tables exist (the first scrape lands while migrating), both consume."""
    topics, group = {"predictions": unique_name("p"), "outcomes": unique_name("o")}, unique_name("g")
    create_topics(kafka_bootstrap, topics.values(), 2)
    config = write_config(tmp_path, topics, group)
    doc = yaml.safe_load(config.read_text())
    config.write_text(yaml.safe_dump({**doc, "triggers": TRIGGERS, "schedule": {"report_dir": str(tmp_path)}}))
    a = start_service(tmp_path, config, pg_url, kafka_bootstrap, name="a")
    b = start_service(tmp_path, config, pg_url, kafka_bootstrap, name="b")
    try:
        for svc in (a, b):  # scrape as early as possible: before the schema exists the scrape must not query it
            wait_until(lambda svc=svc: svc.get("/metrics")[0] == 200, 60, "an early scrape", every=0.05,
                       procs=(a, b))
        wait_until(lambda: all("partitions assigned" in s.log() for s in (a, b)), 90, "both consuming",
                   procs=(a, b))
        wait_until(lambda: any("job weekly_report: skipped" in s.log() for s in (a, b)), 30,
                   "the catch-up weekly report ran on the leader", procs=(a, b))
        assert a.terminate() == 0 and b.terminate() == 0
    finally:
        a.kill()
        b.kill()
    for svc in (a, b):
        _clean(svc.log())


def test_service_waits_for_the_schema_before_scrapes_and_jobs(tmp_path: Path) -> None:
    """`Service.start_exporter()` (what `run` does before migrating) queries nothing and schedules nothing;
    `start_jobs()` after migration does both."""
    store = Store(f"sqlite:///{tmp_path / 'fresh.db'}")
    svc = Service(from_dict({"triggers": TRIGGERS, "schedule": {"report_dir": str(tmp_path)}}), store, port=0,
                  jobs=True, drift=None)
    try:
        svc.start_exporter()
        assert not svc.scheduler.running and svc.scheduler.get_jobs() == []
        names = [m.name for m in svc.snapshot.snapshot()]
        assert names == ["driftline_build_info", "driftline_time_basis"]
        assert svc.triggers_json()["triggers"] == []
        store.migrate()
        svc.start_jobs()
        assert svc.scheduler.running
        ids = {j.id for j in svc.scheduler.get_jobs()}
        assert {"evaluate-triggers", "weekly-report"} <= ids
        assert len([m.name for m in svc.snapshot.snapshot()]) > 1
    finally:
        svc.stop()
        store.close()
