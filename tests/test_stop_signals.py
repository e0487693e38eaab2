"""SIGHUP stops `serve` and `run` cleanly, as SIGTERM and SIGINT do. Soak tryout: `kill -HUP` of `driftline run` (a
closed terminal or ssh session, or a HUP meant as a reload) killed it on the spot by the signal's default action: no
'consumer closed' or 'stopped' line, the consumer never left its group (its partitions idle until the session
timeout), exit status 129. Under `nohup` (SIGHUP ignored at start) it stays ignored."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from kafka_service_support import wait_until
from procs import stop
from tcp_forwarder import free_port


def _serve(tmp_path: Path, ignore_hup: bool = False) -> tuple[subprocess.Popen[bytes], Path]:
    """A `driftline serve` over a new SQLite file, once it printed its start line."""
    log = tmp_path / "serve.log"

    def preexec() -> None:
        if ignore_hup:
            signal.signal(signal.SIGHUP, signal.SIG_IGN)  # what nohup does

    with open(log, "wb") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "driftline.cli", "--db", f"sqlite:///{tmp_path / 's.db'}",
                                 "serve", "--port", str(free_port())], stdout=fh, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env={**os.environ, "COLUMNS": "200"}, preexec_fn=preexec)
    try:
        wait_until(lambda: "windows end at" in log.read_text(), 60, "serve's start line")
    except BaseException:
        stop(proc)
        raise
    return proc, log


def test_sighup_stops_serve_cleanly(tmp_path: Path) -> None:
    proc, log = _serve(tmp_path)
    try:
        proc.send_signal(signal.SIGHUP)
        assert proc.wait(timeout=60) == 0, log.read_text()
    finally:
        stop(proc)
    assert "driftline serve: stopped" in log.read_text()


def test_sighup_ignored_at_start_stays_ignored(tmp_path: Path) -> None:
    proc, log = _serve(tmp_path, ignore_hup=True)
    try:
        proc.send_signal(signal.SIGHUP)
        try:
            proc.wait(timeout=3)  # a HUP that stopped it would end it within this (the test above: ~1 s)
        except subprocess.TimeoutExpired:
            pass
        assert proc.poll() is None, log.read_text()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, log.read_text()
    finally:
        stop(proc)
