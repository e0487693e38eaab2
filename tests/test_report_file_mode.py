"""Report files are created like any file the user writes: mode 0666 less the umask (on-call tryout: written via
tempfile.mkstemp they were 0600 whatever the umask, unreadable to the web server or teammates serving them)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from driftline.reports.generate import _write_atomic


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_a_report_file_takes_its_mode_from_the_umask(tmp_path: Path, umask: int, mode: int) -> None:
    target = tmp_path / "report-fraud-2026-W49.html"
    old = os.umask(umask)
    try:
        _write_atomic(target, "<p>first</p>")
        _write_atomic(target, "<p>second</p>")  # replaced whole, same mode
    finally:
        os.umask(old)
    assert target.read_text() == "<p>second</p>"
    assert stat.S_IMODE(target.stat().st_mode) == mode
    assert [p.name for p in tmp_path.iterdir()] == [target.name]  # no temporary file left behind
