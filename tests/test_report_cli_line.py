"""The terminal line of `driftline report` (user tryout: a week with no predictions said only "given; stored in the
database", and every provisional week "labels still maturing" whatever the reason)."""

from __future__ import annotations

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
