"""A SQLite database this user may not write (another user's file, in another user's folder) is named with what to
do, not reported as an outage: `metrics` ended `database unavailable: (sqlite3.OperationalError) attempt to write a
readonly database` (exit 3, which says "try again later")."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from driftline.cli import main

NOBODY = "65534"


@pytest.fixture()
def shared_dir() -> Iterator[Path]:
    """A folder other users can read (pytest's tmp_path is private to its user)."""
    path = Path(tempfile.mkdtemp(prefix="driftline-ro-"))
    path.chmod(0o755)
    yield path
    path.chmod(0o755)
    shutil.rmtree(path)


def _driftline(*argv: str) -> subprocess.CompletedProcess[str]:
    """driftline run as another user than the database's owner: `nobody` through setpriv when the tests run as root
    (as in CI: root may write anything), else this user (the file and folder are then made read-only)."""
    demote: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: cannot run driftline as another user")
        demote = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    return subprocess.run([*demote, sys.executable, "-m", "driftline", *argv], capture_output=True, text=True,
                          timeout=120, cwd="/")


def test_a_database_this_user_may_not_write_is_named_with_the_fix(shared_dir: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    db = shared_dir / "d.db"
    assert main(["--db", f"sqlite:///{db}", "simulate", "--days", "0.01", "--out", str(shared_dir / "e.jsonl")]) == 0
    assert main(["--db", f"sqlite:///{db}", "replay", str(shared_dir / "e.jsonl")]) == 0
    capsys.readouterr()
    for extra in ("d.db-wal", "d.db-shm"):
        (shared_dir / extra).unlink(missing_ok=True)
    db.chmod(0o644)
    if os.geteuid() != 0:
        db.chmod(0o444)
        shared_dir.chmod(0o555)
    got = _driftline("--db", f"sqlite:///{db}", "metrics")
    assert got.returncode == 2, got.stderr
    assert got.stderr.replace("\n", " ").split() == (
        f"error: cannot write the SQLite database {db}: this user may not write the file and its folder (driftline "
        "opens it in WAL mode, which keeps -wal and -shm files beside it, also to read); run as the user that owns "
        "it, or give this user write access to the file and its folder").split()


def test_a_write_refused_by_a_read_only_file_says_which(shared_dir: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """The file read-only, its folder writable: reads work, and `replay` said only `attempt to write a readonly
    database`; it still ends as an outage (exit 3: `run` keeps its batch and retries), now naming the file."""
    db = shared_dir / "d.db"
    events = shared_dir / "e.jsonl"
    assert main(["--db", f"sqlite:///{db}", "simulate", "--days", "0.01", "--out", str(events)]) == 0
    assert main(["--db", f"sqlite:///{db}", "replay", str(events)]) == 0
    capsys.readouterr()
    events.chmod(0o644)
    db.chmod(0o444)
    shared_dir.chmod(0o777)
    assert main(["--db", f"sqlite:///{db}", "simulate", "--days", "0.01", "--seed", "9", "--out",
                 str(shared_dir / "more.jsonl")]) == 0
    (shared_dir / "more.jsonl").chmod(0o644)
    got = _driftline("--db", f"sqlite:///{db}", "replay", str(shared_dir / "more.jsonl"))
    assert got.returncode == 3, got.stderr
    assert (f"database unavailable: cannot write the SQLite database {db}: this user may not write the file "
            "(driftline opens it in WAL mode") in got.stderr.replace("\n", " ").replace("  ", " ")
