"""A private, throwaway PostgreSQL server whose messages are German (gettext's LANGUAGE=de; the shared test server
answers in English and its `lc_messages` is not ours to change): for checks that must not depend on the wording.

Needs the server binaries (`pg_config --bindir` or /usr/lib/postgresql/*/bin) and their German catalogue; as root
the server runs as the `postgres` user. Anything missing: the test is skipped (this is not a shared service).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


def _bindir() -> Path | None:
    """The folder holding initdb and pg_ctl, if any."""
    found = shutil.which("pg_config")
    if found:
        out = subprocess.run([found, "--bindir"], capture_output=True, text=True).stdout.strip()
        if (Path(out) / "initdb").exists():
            return Path(out)
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
    return Path(dirs[-1]) if dirs and Path(dirs[-1], "initdb").exists() else None


def _free_port() -> int:
    """A loopback TCP port nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_server_user(argv: list[str]) -> list[str]:
    """`argv` run as `postgres` when we are root (the server refuses to run as root)."""
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


@pytest.fixture(scope="module")
def german_pg() -> Iterator[str]:
    """libpq URL (user postgres, trust, database postgres) of a German-speaking private server."""
    bindir = _bindir()
    if bindir is None or (os.geteuid() == 0 and shutil.which("runuser") is None):
        pytest.skip("no PostgreSQL server binaries to start a private server")
    home = Path(tempfile.mkdtemp(prefix="driftline-pg-de-"))
    if os.geteuid() == 0:
        shutil.chown(home, "postgres")
    data, port = home / "data", _free_port()
    env = {**os.environ, "LANGUAGE": "de", "LC_ALL": "C.UTF-8"}
    try:
        if subprocess.run(_as_server_user([str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"]),
                          capture_output=True, env=env).returncode:
            pytest.skip("initdb failed")
        opts = f"-p {port} -k {home} -c listen_addresses=127.0.0.1"
        if subprocess.run(_as_server_user([str(bindir / "pg_ctl"), "-D", str(data), "-o", opts, "-l",
                                           str(home / "log"), "-w", "start"]), capture_output=True, env=env).returncode:
            pytest.skip("the private server did not start")
        url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        yield url
    finally:
        subprocess.run(_as_server_user([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]),
                       capture_output=True, env=env)
        shutil.rmtree(home, ignore_errors=True)
