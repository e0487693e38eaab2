"""No option parses with a bare `type=float`, which takes nan, inf and negatives (tryout: `run --maintain-every
-5` maintained on every poll, `nan` never: implicit negatives never matured and predictions never expired)."""

from __future__ import annotations

import pytest

from driftline.cli import build_parser
from test_whole_numbers import actions


def test_no_option_parses_with_bare_float() -> None:
    bare = [f"{path} {'/'.join(a.option_strings) or a.dest}" for path, a in actions(build_parser()) if a.type is float]
    assert bare == []


@pytest.mark.parametrize("value", ["-5", "0", "nan", "inf", "1e9"])
def test_maintain_every_outside_a_second_fraction_to_a_day_is_refused(capsys, value: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as exit_:  # refused by the parse, before `run` would start
        build_parser().parse_args(["run", "--maintain-every", value])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: --maintain-every: must be more than 0 and at most 86400 seconds (a day), got {value}"]


def test_maintain_every_takes_seconds() -> None:
    assert build_parser().parse_args(["run", "--maintain-every", "0.5"]).maintain_every == 0.5
