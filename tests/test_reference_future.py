"""A far-future timestamp in `reference set --file` (user tryout): `replay` refuses an event stamped more than a
day ahead (ts_in_future), but the reference file reader took it, stored a profile ending in year 10000, and from
then on `reference list`, `reference show` and `drift` failed with "unexpected ValueError: year 10000 is out of
range"; `report --week 9999-W52` failed the same way instead of refusing the week."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import update

from driftline.cli import main
from driftline.readouts.references import reference_profiles
from driftline.storage.store import Store

LINES = [{"type": "prediction", "prediction_id": f"p{i}", "model": "fraud", "ts": f"2026-11-25T10:{i:02d}:00Z",
          "score": 0.1 + i / 100, "features": {"amount": 10.0 + i}} for i in range(30)]
FUTURE = {"type": "prediction", "prediction_id": "z", "model": "fraud", "ts": "9999-12-31T23:59:59Z", "score": 0.3,
          "features": {"amount": 1e6}}


def _write(path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_a_far_future_event_in_a_reference_file_is_skipped_like_replay_refuses_it(tmp_path, capsys) -> None:
    db = ["--db", f"sqlite:///{tmp_path / 'r.db'}"]
    assert main([*db, "replay", _write(tmp_path / "live.jsonl", LINES)]) == 0
    assert main([*db, "reference", "set", "--file", _write(tmp_path / "ref.jsonl", [*LINES, FUTURE])]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "30 predictions" in out and "1 line skipped (invalid, or stamped more than a day ahead)" in out
    assert main([*db, "reference", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [r["end"] for r in listed] == ["2026-11-25T11:00:00Z"]
    assert main([*db, "reference", "show", "--json"]) == 0
    capsys.readouterr()
    assert main([*db, "drift", "--json"]) == 0


def test_a_reference_stored_with_a_far_future_end_still_lists(tmp_path, capsys) -> None:
    """References stored before the fix keep their bogus end: listed as epoch seconds, not a crash."""
    db = ["--db", f"sqlite:///{tmp_path / 'r.db'}"]
    assert main([*db, "replay", _write(tmp_path / "live.jsonl", LINES)]) == 0
    assert main([*db, "reference", "set", "--file", str(tmp_path / "live.jsonl")]) == 0
    store = Store(db[1])
    with store.write() as conn:
        conn.execute(update(reference_profiles).values(end_ts=253402300800.0 + 3600))
    store.close()
    capsys.readouterr()
    assert main([*db, "reference", "list"]) == 0
    assert "253402304400" in capsys.readouterr().out


@pytest.mark.parametrize("week", ["9999-W52", "2099-W01"])
def test_a_week_that_has_not_begun_is_refused_with_one_line(tmp_path, capsys, week) -> None:
    db = ["--db", f"sqlite:///{tmp_path / 'r.db'}"]
    assert main([*db, "replay", _write(tmp_path / "live.jsonl", LINES)]) == 0
    capsys.readouterr()
    assert main([*db, "report", "--week", week, "--out", str(tmp_path / "rep")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --week: {week} has not begun (now is ") and err.count("\n") == 1

