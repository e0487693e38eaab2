"""`driftline compact` runs serve's daily compaction on demand (soak tryout: a database fed by `replay` or by `run`
without `serve` was never compacted, and the CLI had no way to start it). It must compact everything due, however
many bounded calls that takes, change no whole-day number, do nothing the second time, and refuse a database that
does not exist instead of creating one."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from pathlib import Path

import pytest

from driftline.cli import main

from helpers import close_docs
import driftline.commands.compact_cmd as compact_cmd

DAY = 86400


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    capsys.readouterr()
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def replayed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    events = tmp_path / "ev.jsonl"
    assert main(["simulate", "--days", "100", "--per-day", "40", "--end", "2026-06-01T00:00:00Z",
                 "--out", str(events)]) == 0
    url = f"sqlite:///{tmp_path / 'c.db'}"
    assert main(["--db", url, "replay", str(events)]) == 0
    capsys.readouterr()
    return url


def _old_rows(url: str, cutoff: float) -> tuple[int, int, int, int]:
    """(bucket rows, day rows among them, sample rows, day samples among them) starting before `cutoff`."""
    with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
        b = conn.execute("SELECT count(*), count(*) FILTER (WHERE shard = -1) FROM buckets WHERE bucket_start < ?",
                         (cutoff,)).fetchone()
        s = conn.execute("SELECT count(*), count(*) FILTER (WHERE span = 86400) FROM feature_samples "
                         "WHERE bucket_start < ?", (cutoff,)).fetchone()
    return b[0], b[1], s[0], s[1]


def test_compact_merges_every_old_day_in_bounded_calls_and_keeps_whole_day_numbers(
        replayed: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compact_cmd, "BATCH_GROUPS", 3)  # many calls: every one must be made
    window = ["--db", replayed, "metrics", "--json", "--window", "5d", "--at", "2026-03-01T00:00:00Z"]
    before = _json(capsys, *window)
    done = _json(capsys, "--db", replayed, "compact", "--json")
    cutoff = datetime.fromisoformat(done["cutoff"].replace("Z", "+00:00")).timestamp()
    assert cutoff % DAY == 0 and done["groups"] > 3 and done["sample_days"] > 3
    rows, day_rows, samples, day_samples = _old_rows(replayed, cutoff)
    assert rows == day_rows == done["rows_after"] == done["groups"] and done["rows_before"] > 10 * rows
    assert samples == day_samples == done["sample_days"]
    after = _json(capsys, *window)
    assert after["counts"] == before["counts"]
    assert close_docs(after["metrics"], before["metrics"])  # sums merged in another order: last digits may differ
    again = _json(capsys, "--db", replayed, "compact", "--json")
    assert (again["groups"], again["sample_days"]) == (0, 0)
    assert main(["--db", replayed, "compact"]) == 0
    assert "0 day groups" in capsys.readouterr().out


def test_compact_refuses_a_database_that_does_not_exist(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--db", f"sqlite:///{tmp_path / 'typo.db'}", "compact"]) == 2
    assert "no database at" in capsys.readouterr().err
    assert not (tmp_path / "typo.db").exists()
