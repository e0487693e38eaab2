"""Stopping a subprocess a test started: SIGTERM, then SIGKILL when it does not end in time (shared teardown)."""

from __future__ import annotations

import subprocess


def stop(proc: subprocess.Popen, timeout: float = 15.0) -> None:
    """Terminate `proc` if it still runs; kill it when it has not exited `timeout` seconds later."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
