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
