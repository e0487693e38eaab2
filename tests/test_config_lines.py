"""A config error names the line of the setting it is about, after the file: in a long file (the example is 150
lines) `invalid field \\`triggers[3].value\\`` alone left the user counting list items."""

from __future__ import annotations

from pathlib import Path

import pytest

from driftline.config import ConfigError, load

TEXT = """model: fraud
labels:
  policy: explicit
  horizon: 90d
ab: {control: A, arms: {A: 0.5, B: 0.5}}
triggers:
  - {name: ok, metric: fpr, op: ">", value: 0.08}
  - name: r
    metric: recall
    op: "<"
    value: 0.7
"""
"""A valid config; each case below breaks one setting of it."""


@pytest.mark.parametrize("old, new, line, says", [
    ("  horizon: 90d", "  horizen: 90d", 4, "unknown field `labels.horizen`"),
    ("B: 0.5", "B: zero", 5, "invalid field `ab.arms.B`"),
    ("    value: 0.7", "    value: 7", 11, "invalid field `triggers[1].value`"),
    ("model: fraud", 'model: " fraud"', 1, "invalid field `model`"),
])
def test_the_error_names_the_line_of_its_field(tmp_path: Path, old: str, new: str, line: int, says: str) -> None:
    p = tmp_path / "c.yaml"
    p.write_text(TEXT)
    load(p)
    p.write_text(TEXT.replace(old, new))
    with pytest.raises(ConfigError) as err:
        load(p)
    assert str(err.value).startswith(f"config {p}, line {line}: {says}"), str(err.value)


def test_a_field_not_in_the_file_has_no_line(tmp_path: Path) -> None:
    """A check across settings that names a default (the 1h bucket against `window: 30m`) has no line of its own."""
    p = tmp_path / "c.yaml"
    p.write_text("model: fraud\nwindow: 30m\n")
    with pytest.raises(ConfigError) as err:
        load(p)
    assert str(err.value).startswith(f"config {p}: invalid field `bucket`: 1h is longer than the window")
