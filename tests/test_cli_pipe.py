"""A reader that goes away (`driftline metrics | head -1`): the command ends quietly with 0, as the SRE tryout
expected under `set -o pipefail` (rich's console exited 1 without a word; a plain print left Python's last flush
to fail)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from driftline import cli


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> str:
    tmp = tmp_path_factory.mktemp("pipe")
    events = tmp / "e.jsonl"
    assert cli.main(["simulate", "--days", "2", "--per-day", "500", "--out", str(events)]) == 0
    url = f"sqlite:///{tmp / 'd.db'}"
    assert cli.main(["--db", url, "replay", str(events)]) == 0
    return url


@pytest.mark.parametrize("command", [["metrics"], ["metrics", "--json"], ["calibration"], ["dead-letters"],
                                     ["--help"]])
def test_a_closed_pipe_ends_the_command_with_0_and_no_message(db, command):
    exe = Path(sys.executable).with_name("driftline")
    proc = subprocess.Popen([str(exe), "--db", db, *command], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before the first line: every write meets a broken pipe
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0 and err == "", err


def test_the_same_commands_still_fail_loudly_on_a_real_error(db, tmp_path):
    exe = Path(sys.executable).with_name("driftline")
    res = subprocess.run([str(exe), "--db", db, "metrics", "--window", "-3d"], capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 2 and "window" in res.stderr
