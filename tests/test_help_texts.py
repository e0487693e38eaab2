"""Help texts and option checks say what the commands do (user tryout): `demo --help` named the wrong default for
--end."""

from __future__ import annotations

import pytest

from driftline.cli import main
from driftline.commands.demo import demo_end

MONDAY = 1_796_601_600.0  # 2026-12-07T00:00:00Z, a Monday


def test_demo_help_names_the_monday_the_demo_ends_at(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "default now" not in help_text
    assert "--end END end of the simulated span (RFC 3339; default: the Monday 00:00 UTC before now" in help_text
    assert demo_end(MONDAY + 3.5 * 86400) == MONDAY  # what the help says: Thursday noon -> that week's Monday


def test_simulate_help_still_says_now(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    assert "(RFC 3339; default now)" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("argv, line", [
    (["dead-letters", "--limit", "0"], "error: --limit: must be 1 to 2,147,483,647, got 0"),
    (["replay", "-", "--batch-size", "0"], "error: --batch-size: must be 1 to 2,147,483,647, got 0"),
    (["dead-letters", "--limit", "-1"], "error: --limit: must be 1 to 2,147,483,647, got -1"),
    (["dead-letters", "--limit", "99999999999999999999"],  # second tryout: an unexpected OverflowError
     "error: --limit: must be 1 to 2,147,483,647, got 99999999999999999999"),
    (["dead-letters", "--limit", "many"], "error: --limit: 'many' is not a number"),
    (["serve", "--port", "70000"], "error: --port: port 70000 is outside 0..65535"),
])
def test_a_bad_option_value_is_one_error_line(tmp_path, capsys, argv: list[str], line: str) -> None:
    """Like every other check (--log-level, --window): one `error:` line and exit 2, not argparse's usage too."""
    with pytest.raises(SystemExit) as exit_:
        main(["--db", f"sqlite:///{tmp_path / 'd.db'}", *argv])
    assert exit_.value.code == 2
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err.splitlines() == [line]


def test_a_usage_mistake_still_shows_the_usage(capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["dead-letters", "--bogus"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.startswith("usage: driftline") and "unrecognized arguments: --bogus" in err
