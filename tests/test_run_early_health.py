"""`driftline run` and `driftline serve` answer /healthz before it imports and builds its service (on-call tryout: a Kubernetes
liveness/startup probe met connection refused for 2-3 s after the start, spent importing the exporter's readouts
and building the service before the port was bound). The import of driftline.service.live is held at a gate (a
sitecustomize import hook) until the test opens it: /healthz must answer 200 and /readyz 503 `starting: …` while
it is held, and the exporter then serves the same port. A port that is taken is refused as before."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from driftline.exporter.early import STARTING
from http_probe import http_get
from kafka_service_support import wait_until
from tcp_forwarder import free_port

GATE_HOOK = '''
import importlib.abc, os, sys, time
GATE = {gate!r}
class _Gate(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "driftline.service.live":
            open(GATE + ".reached", "w").close()
            while not os.path.exists(GATE):
                time.sleep(0.02)
        return None
sys.meta_path.insert(0, _Gate())
'''


def _run(tmp_path: Path, port: int, hook: Path | None = None, command: str = "run") -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRIFTLINE_")}
    if hook is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(hook), *filter(None, [env.get("PYTHONPATH")])])
    log = open(tmp_path / "run.log", "ab")
    return subprocess.Popen([sys.executable, "-m", "driftline.cli", "--log-level", "INFO", "--db",
                             f"sqlite:///{tmp_path / 'd.db'}", command,
                             *(["--kafka", "127.0.0.1:1"] if command == "run" else []), "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)


def _ready_after_the_gate(command: str, url: str) -> None:
    """`run` (Kafka unreachable here) turns to the exporter's own 503 naming Kafka or the database; `serve` (a
    SQLite file) turns ready."""
    if command == "serve":
        assert wait_until(lambda: http_get(url + "/readyz")[0] == 200, 60, "serve ready on the same port")
        return
    why = wait_until(lambda: (lambda r: r[0] == 503 and not r[1].startswith("starting:") and r[1])(
        http_get(url + "/readyz")), 60, "the exporter serving the same port")
    assert "kafka" in why or "database" in why, why


@pytest.mark.parametrize("command", ["run", "serve"])
def test_healthz_answers_while_the_service_is_still_being_imported(tmp_path: Path, command: str) -> None:
    """`serve` bound its port only once APScheduler, the readouts and its service were imported and built (~1.5 s
    on a quiet host, 2.5-3.5 s on a loaded one; tryout): it has `run`'s early listener now."""
    hook, gate = tmp_path / "hook", tmp_path / "gate"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(GATE_HOOK.format(gate=str(gate)))
    port = free_port()
    proc = _run(tmp_path, port, hook, command=command)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: Path(str(gate) + ".reached").exists(), 60, f"{command} importing its service")
        assert wait_until(lambda: http_get(url + "/healthz") == (200, "ok\n"), 30, "/healthz while importing")
        assert http_get(url + "/readyz") == (503, STARTING + "\n")
        assert http_get(url + "/metrics") == (503, STARTING + "\n")
        assert not gate.exists() and proc.poll() is None  # still held at the import: nothing else was built
        gate.touch()
        _ready_after_the_gate(command, url)
        assert http_get(url + "/healthz") == (200, "ok\n")
        assert "driftline_build_info" in http_get(url + "/metrics")[1]
        proc.terminate()
        assert proc.wait(timeout=60) == 0, (tmp_path / "run.log").read_text()
    finally:
        gate.touch()
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


@pytest.mark.parametrize("command", ["run", "serve"])
def test_a_taken_port_is_refused_as_before(tmp_path: Path, command: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        proc = _run(tmp_path, port, command=command)
        rc = proc.wait(timeout=60)
    out = (tmp_path / "run.log").read_text()
    assert rc == 2 and f"error: cannot serve /metrics on 127.0.0.1:{port}: Address already in use" in out, (rc, out)
