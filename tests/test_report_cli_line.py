"""The terminal line of `driftline report` (user tryout: a week with no predictions said only "given; stored in the
database", and every provisional week "labels still maturing" whatever the reason)."""

from __future__ import annotations

import pytest

from driftline.cli import main
from test_reference_future import LINES, _write



def test_report_of_a_week_without_predictions_says_so_on_the_terminal(tmp_path, capsys) -> None:
    """User tryout: `report --week` of a week with no predictions said only 'given; stored in the database'."""
    db = ["--db", f"sqlite:///{tmp_path / 'r.db'}"]
    assert main([*db, "replay", _write(tmp_path / "live.jsonl", LINES)]) == 0
    capsys.readouterr()
    assert main([*db, "report", "--week", "2026-W40", "--out", str(tmp_path / "rep")]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "report of fraud for 2026-W40: given; no predictions stored for this week; stored in the database" in err


@pytest.mark.parametrize("week, why", [("0001-W01", "ends before 1970-01-01"), ("1969-W52", "ends before 1970-01-01"),
                                       ("10000-W01", "is after 9999")])
def test_a_week_no_event_can_be_in_is_refused_with_one_line(tmp_path, capsys, week, why) -> None:
    """Tryout: `report --week 0001-W01` was accepted and wrote an empty report of week '1-W01'."""
    db = ["--db", f"sqlite:///{tmp_path / 'r.db'}"]
    assert main([*db, "replay", _write(tmp_path / "live.jsonl", LINES)]) == 0
    capsys.readouterr()
    assert main([*db, "report", "--week", week, "--out", str(tmp_path / "rep")]) == 2
    assert capsys.readouterr().err == (f"error: --week: {week} {why}: no event can be in it (event times are "
                                       "1970-01-01..9999-12-31)\n")
    assert not (tmp_path / "rep").exists()


def test_the_first_week_of_1970_is_a_week_events_can_be_in(tmp_path, capsys) -> None:
    """1970-W01 starts on 1969-12-29 but holds 1970-01-01..04: an empty week, not a refused one."""
    db = ["--db", f"sqlite:///{tmp_path / 'r.db'}"]
    assert main([*db, "replay", _write(tmp_path / "live.jsonl", LINES)]) == 0
    assert main([*db, "report", "--week", "1970-W01", "--out", str(tmp_path / "rep")]) == 0
    assert "no predictions stored for this week" in " ".join(capsys.readouterr().err.split())
