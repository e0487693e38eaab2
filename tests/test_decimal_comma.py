"""A number written with a decimal comma (`threshold: 0,5`, common in European locales) or a thousands separator
is refused with a line saying how to write it, in the config (block or flow style, durations too) and on the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from driftline.cli import main
from driftline.config import ConfigError, load

HINT = r"a decimal comma\? numbers take a decimal point and no thousands separator: write "


@pytest.mark.parametrize(("text", "message"), [
    ("threshold: 0,5\n", r"line 1: invalid field `threshold`: .*\(`0,5` on line 1: " + HINT + r"0\.5\)$"),
    ("threshold: '0,5'\n", r"line 1: invalid field `threshold`: .*" + HINT + r"0\.5\)$"),
    ("drift:\n  alpha: 0,01  # strict\n", r"line 2: invalid field `drift.alpha`: .*" + HINT + r"0\.01\)$"),
    ("targets:\n  recall: 0,7\n", r"invalid field `targets.recall`: .*" + HINT + r"0\.7\)$"),
    ("ab:\n  arms:\n    A: 0,5\n    B: 0,5\n", r"invalid field `ab.arms.A`: .*" + HINT + r"0\.5\)$"),
    ("limits:\n  max_features: 1,000\n", r"invalid field `limits.max_features`: .*" + HINT + r"1\.000 or 1000\)$"),
    ("costs:\n  currency: EUR\n  monthly_volume: 1,000,000\n", r"invalid field `costs.monthly_volume`: .*"
                                                                + HINT + r"1000000\)$"),
    ("window: 1,5d\n", r"invalid field `window`: expected a duration.*" + HINT + r"1\.5d\)$"),
    # inside {…} YAML splits `0,7` into 0 and a key 7: the error named the key, not the comma
    ("triggers:\n- {name: t, metric: recall, op: '<', value: 0,7}\n",
     r"line 2: invalid field `triggers\[0\]`: key 7 is a number.*\(`0,7` on line 2: a decimal comma\? inside \{…\} "
     r"or \[…\] YAML reads the comma as separating two entries; numbers take a decimal point"),
    ("ab:\n  arms: {A: 0,5, B: 0,5}\n", r"not valid YAML at line 2.*key 5 is given twice.*\(`0,5` on line 2: "
                                        r"a decimal comma\? inside"),
    ("{threshold: 0,5}\n", r"invalid top level: key 5 is a number.*\(`0,5` on line 1: a decimal comma\?"),
    ("kafka:\n  options:\n    linger_ms: 0,5\n", r"kafka.options.linger_ms`: '0,5' is not a number.*" + HINT),
])
def test_a_decimal_comma_in_the_config_says_to_write_a_decimal_point(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load(path)


def test_a_list_of_numbers_is_not_taken_for_a_decimal_comma(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("limits:\n  models: [1,2]\n")
    with pytest.raises(ConfigError) as err:
        load(path)
    assert "decimal comma" not in str(err.value)


@pytest.mark.parametrize(("argv", "line"), [
    (["simulate", "--prevalence", "0,01"], "error: --prevalence: '0,01' is not a number (" + "a decimal comma? "
     "numbers take a decimal point and no thousands separator: write 0.01)"),
    (["simulate", "--per-day", "1,000"], "error: --per-day: '1,000' is not a number (a decimal comma? numbers take a "
     "decimal point and no thousands separator: write 1.000 or 1000)"),
])
def test_a_decimal_comma_on_the_command_line_says_the_same(tmp_path, argv: list[str], line: str, capsys) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as exit_:  # argparse's types end the parse
        main(["--db", f"sqlite:///{tmp_path / 'd.db'}", *argv])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.splitlines() == [line]


def test_a_duration_with_a_decimal_comma_on_the_command_line(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["--db", f"sqlite:///{tmp_path / 'd.db'}", "metrics", "--window", "1,5d"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: --window: invalid duration '1,5d': use a number and a unit s/m/h/d/w, e.g. '7d' (a decimal comma? "
        "numbers take a decimal point and no thousands separator: write 1.5d)"]
