"""A duration written with a unit word, a capital or no unit names the form it takes (tryout: `horizon: 30 days`,
`window: 7` and `--window "7 days"` were refused with the format only)."""

from __future__ import annotations

from pathlib import Path

import pytest

from driftline.config import ConfigError, load
from driftline.durations import parse_duration

FORMAT = "expected a duration: a number and a unit s/m/h/d/w, e.g. '90s', '1h', '7d', got "


@pytest.mark.parametrize(("value", "hint"), [
    ("30 days", "'30 days' (did you mean '30d'?)"),
    ("7D", "'7D' (did you mean '7d'?)"),
    ("1 week", "'1 week' (did you mean '1w'?)"),
    ("1min", "'1min' (did you mean '1m'?)"),
    ("2 Hours", "'2 Hours' (did you mean '2h'?)"),
    ("7", "'7' (7 what? add a unit: 7s, 7m, 7h, 7d or 7w)"),
    ("1M", "'1M' (months and years have no fixed length: write days or weeks, e.g. 30d, 365d)"),
    ("7x", "'7x'"),
])
def test_a_duration_in_other_words_names_the_form(tmp_path: Path, value: str, hint: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(f"labels:\n  horizon: {value}\n")
    with pytest.raises(ConfigError) as err:
        load(path)
    assert str(err.value) == f"config {path}, line 2: invalid field `labels.horizon`: {FORMAT}{hint}"


def test_the_cli_names_the_form_too() -> None:
    with pytest.raises(ValueError, match=r"^invalid duration '7 days': .* \(did you mean '7d'\?\)$"):
        parse_duration("7 days")
