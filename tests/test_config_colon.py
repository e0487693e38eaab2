"""A setting written without the space YAML needs after its colon (`model:fraud`) is named with the fix: YAML reads
it as text, and the error said only "top level must be a mapping of settings" or "expected a mapping"."""

from __future__ import annotations

from pathlib import Path

import pytest

from driftline.config import ConfigError, load


@pytest.mark.parametrize(("text", "message"), [
    ("model:fraud\n", ": top level must be a mapping of settings (`name: value` lines), got text ('model:fraud') "
                      "(`model:fraud` on line 1: YAML needs a space after the colon: `model: fraud`)"),
    ("labels:\n  horizon:30d\n", ", line 1: invalid field `labels`: expected a mapping (`name: value` lines "
                                 "indented under it), got text ('horizon:30d') (`horizon:30d`: YAML needs a space "
                                 "after the colon: `horizon: 30d`)"),
    ('model = "fraud"\n', ": top level must be a mapping of settings (`name: value` lines), got text "
                          "('model = \"fraud\"')"),
    ("[a, b]\n", ": top level must be a mapping of settings (`name: value` lines), got a list (['a', 'b'])"),
])
def test_what_yaml_read_instead_of_settings_is_said(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load(path)
    assert str(err.value) == f"config {path}{message}"


def test_a_url_is_not_taken_for_a_missing_space(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("notify:\n  webhook_url: https://hooks.example.com/x\nmodel: [a]\n")
    with pytest.raises(ConfigError) as err:
        load(path)
    assert "space after the colon" not in str(err.value)
