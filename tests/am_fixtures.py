"""A real Alertmanager (Debian `prometheus-alertmanager`) routing with the shipped deploy/alertmanager.yml to a
webhook sink in the test process, so tests see exactly the notifications an on-call would get."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from services import require_binary

DEPLOY_AM = Path(__file__).resolve().parents[1] / "deploy" / "alertmanager" / "alertmanager.yml"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Sink:
    """Webhook payloads Alertmanager delivered (each one notification of one group)."""

    payloads: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def of(self, alertname: str) -> list[dict[str, Any]]:
        with self.lock:
            return [p for p in self.payloads if p.get("groupLabels", {}).get("alertname") == alertname
                    or any(a["labels"].get("alertname") == alertname for a in p.get("alerts", []))]


@dataclass
class Alertmanager:
    url: str
    sink: Sink

    def alerts(self, alertname: str) -> list[dict[str, Any]]:
        """Alerts Alertmanager holds for `alertname` (active, silenced or inhibited; not resolved ones)."""
        with urllib.request.urlopen(f"{self.url}/api/v2/alerts", timeout=5) as r:
            return [a for a in json.loads(r.read()) if a["labels"].get("alertname") == alertname]


def start_alertmanager(binary: str, config: Path, storage: Path, log_path: Path, timeout_s: float = 90.0
                       ) -> tuple[subprocess.Popen[bytes], str]:
    """A real Alertmanager on a free loopback port with `config`, waited for until /-/ready (a hang guard)."""
    port = free_port()
    with log_path.open("wb") as log:
        proc = subprocess.Popen([binary, f"--config.file={config}", f"--storage.path={storage}",
                                 f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address="],
                                stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(url + "/-/ready", timeout=1) as r:
                if r.status == 200:
                    return proc, url
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"alertmanager did not start: {log_path.read_text()[-2000:]}")
        time.sleep(0.1)


def _sink_server(sink: Sink) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server API
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            with sink.lock:
                sink.payloads.append(body)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *_: Any) -> None:
            pass

    return ThreadingHTTPServer(("127.0.0.1", 0), Handler)


@pytest.fixture
def alertmanager_sink(tmp_path: Path) -> Iterator[Alertmanager]:
    """Alertmanager with the shipped routing (group_by, routes, inhibitions), timings shortened to seconds and
    every receiver's webhook pointed at a sink."""
    binary = require_binary("prometheus-alertmanager")
    sink = Sink()
    server = _sink_server(sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    cfg = yaml.safe_load(DEPLOY_AM.read_text())
    cfg["route"].update(group_wait="1s", group_interval="1s", repeat_interval="1h")
    for route in cfg["route"].get("routes", []):
        route.pop("repeat_interval", None)
    for rec in cfg["receivers"]:
        for hook in rec.get("webhook_configs", []):
            hook["url"] = f"http://127.0.0.1:{server.server_address[1]}/{rec['name']}"
    (tmp_path / "am.yml").write_text(yaml.safe_dump(cfg))
    proc, url = start_alertmanager(binary, tmp_path / "am.yml", tmp_path / "am", tmp_path / "alertmanager.log")
    try:
        yield Alertmanager(url, sink)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        server.shutdown()
        server.server_close()
