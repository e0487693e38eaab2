"""What the terminal output does at its edges (SRE tryout): a reader that goes away (`driftline metrics | head -1`)
ends the command quietly with 0, as expected under `set -o pipefail` (rich's console exited 1 without a word);
lists of names that come from events are bounded on screen (--json keeps them whole)."""

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


@pytest.mark.parametrize("command,code", [(["alerts", "render"], 0), (["metrics"], 0),
                                          (["metrics", "--window", "-3d"], 2)])
def test_stdout_and_stderr_on_one_closed_pipe_keep_the_commands_code(db, command, code):
    """`driftline ... 2>&1 | head -1` closes stderr too (second tryout: exit 1 from rich's error console); a
    refused command still says 2, although nobody can read why."""
    exe = Path(sys.executable).with_name("driftline")
    proc = subprocess.Popen([str(exe), "--db", db, *command], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    proc.stdout.close()
    assert proc.wait(timeout=60) == code


def test_the_same_commands_still_fail_loudly_on_a_real_error(db, tmp_path):
    exe = Path(sys.executable).with_name("driftline")
    res = subprocess.run([str(exe), "--db", db, "metrics", "--window", "-3d"], capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 2 and "window" in res.stderr


def test_junk_feature_names_print_a_bounded_list_and_json_keeps_them_all(tmp_path, capsys):
    """SRE tryout: 10,000 junk feature names (no `features:` declared) printed 1,153 'not tracked' lines in
    `reference set` and a 20 KB footnote in `drift`; the terminal lists 20 and counts the rest."""
    import json

    from driftline.commands.drift_cmds import SHOWN_NAMES

    t0 = 1_790_000_000
    lines = []
    for i in range(400):  # 50 names per event, 8 events per hour: the names pile up across buckets
        feats = {f"junk_{i}_{j}": j for j in range(50)}
        lines.append(json.dumps({"type": "prediction", "prediction_id": f"p{i}", "model": "m", "ts": t0 + i * 450,
                                 "score": (i % 10) / 10, "features": feats}))
    events = tmp_path / "junk.jsonl"
    events.write_text("\n".join(lines) + "\n")
    url = f"sqlite:///{tmp_path / 'j.db'}"
    assert cli.main(["--db", url, "replay", str(events)]) == 0
    capsys.readouterr()
    window = ["--from", "2026-09-21", "--to", "2026-09-24"]
    assert cli.main(["--db", url, "reference", "set", *window, "--json"]) == 0
    dropped = json.loads(capsys.readouterr().out)["dropped"]
    assert len(dropped) > 1000
    assert cli.main(["--db", url, "reference", "set", *window, "--force"]) == 0
    out = capsys.readouterr().out
    assert out.count("not tracked:") == SHOWN_NAMES + 1 and f"and {len(dropped) - SHOWN_NAMES:,} more" in out
    assert len(out) < 6000
    assert cli.main(["--db", url, "drift", "--window", "3d", "--at", "2026-09-24"]) == 0
    out = capsys.readouterr().out
    flat = " ".join(out.split())  # the footnote wraps at the console's width
    assert "not in the reference (not compared):" in flat and "more (--json lists them)" in flat and len(out) < 8000
