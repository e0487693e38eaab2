"""`driftline serve` started while its database is down waits for it, as `run` does (it exited with status 3,
so a replica scheduled before its database came up went into a crash loop): /healthz answers, /readyz says why
it is not ready, and once the database answers the schema is migrated and the series are served."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from http_probe import http_get
from kafka_service_support import wait_until
from tcp_forwarder import free_port

pytestmark = pytest.mark.postgres


def test_serve_waits_for_a_database_that_is_down_at_start(pg_behind_forwarder: Any, tmp_path: Path) -> None:
    pg = pg_behind_forwarder
    pg.forwarder.stop()  # the database is unreachable before serve starts
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "driftline.cli", "--log-level", "INFO", "--db", pg.url,
                                 "serve", "--port", str(port)], stdout=fh, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
    try:
        wait_until(lambda: "database unavailable while migrating" in log.read_text(), 60, "waiting logged")
        assert http_get(base + "/healthz")[0] == 200
        status, body = http_get(base + "/readyz")
        assert status == 503 and "database unreachable" in body, body
        assert proc.poll() is None, log.read_text()  # still waiting, not exited
        pg.forwarder.start()
        wait_until(lambda: http_get(base + "/readyz")[0] == 200, 60, "ready once the database answers")
        assert "driftline_build_info" in http_get(base + "/metrics")[1]
        assert "schema ready" in http_get(base + "/readyz")[1]
        wait_until(lambda: "job weekly_report: skipped" in log.read_text(), 60, "the jobs ran once migrated")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "Traceback" not in log.read_text()
