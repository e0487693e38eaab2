"""SIGHUP stops `serve` and `run` cleanly, as SIGTERM and SIGINT do. Soak tryout: `kill -HUP` of `driftline run` (a
closed terminal or ssh session, or a HUP meant as a reload) killed it on the spot by the signal's default action: no
'consumer closed' or 'stopped' line, the consumer never left its group (its partitions idle until the session
timeout), exit status 129. Under `nohup` (SIGHUP ignored at start) it stays ignored."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from driftline.cli import main

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


def test_a_second_ctrl_c_exits_at_once_while_a_job_waits_for_the_write_lock(tmp_path: Path) -> None:
    """Soak tryout: with another connection holding the SQLite write lock, serve's first trigger evaluation waits
    out the 30 s lock timeout, and the clean shutdown waits for it: two Ctrl-Cs still took 32 s, exit 0."""
    db = tmp_path / "s.db"
    (tmp_path / "ev.jsonl").write_text('{"type":"prediction","prediction_id":"a1","model":"m",'
                                       '"ts":"2026-12-05T10:00:00Z","score":0.9}\n')
    assert main(["--db", f"sqlite:///{db}", "replay", str(tmp_path / "ev.jsonl")]) == 0
    config = tmp_path / "c.yaml"
    config.write_text('model: m\ntriggers:\n  - {name: low_recall, metric: recall, op: "<", value: 0.5}\n')
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer's long transaction
    log = tmp_path / "serve.log"
    try:
        with open(log, "wb") as fh:
            proc = subprocess.Popen([sys.executable, "-m", "driftline.cli", "--config", str(config), "--db",
                                     f"sqlite:///{db}", "--log-level", "debug", "serve", "--port", str(free_port())],
                                    stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env={**os.environ, "COLUMNS": "200"})
        try:
            wait_until(lambda: "Running job \"Service.evaluate_once" in log.read_text(), 60,
                       "the first trigger evaluation to start (it then waits for the write lock)")
            proc.send_signal(signal.SIGINT)
            wait_until(lambda: "stopping cleanly (Ctrl-C again to exit at once)" in log.read_text(), 30,
                       "the first Ctrl-C to be handled")
            proc.send_signal(signal.SIGINT)
            code = proc.wait(timeout=60)
        finally:
            stop(proc)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    text = log.read_text()
    assert code == 130, text
    assert "interrupted again: exiting now" in text, text
    assert "trigger evaluation skipped" not in text, text  # it did not wait the lock out first
