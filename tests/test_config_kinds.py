"""A setting of the wrong shape (a mapping where a list is wanted, text where a section is) is said in the config's
words: msgspec's "Expected `array`, got `object`" was JSON jargon (tryout: `triggers:` written as one mapping)."""

from __future__ import annotations

from pathlib import Path

import pytest

from driftline.config import ConfigError, load

LIST = "expected a list (`- item` lines under it, or [a, b])"
MAPPING = "expected a mapping (`name: value` lines indented under it)"


@pytest.mark.parametrize(("text", "message"), [
    ("triggers:\n  name: a\n  metric: recall\n",
     f"line 1: invalid field `triggers`: {LIST}, got a mapping ({{'name': 'a', 'metric': 'recall'}})"),
    ("slices: country\n", f"line 1: invalid field `slices`: {LIST}, got text ('country')"),
    ("labels: 30d\n", f"line 1: invalid field `labels`: {MAPPING}, got text ('30d')"),
    ("features: [a, b]\n", f"line 1: invalid field `features`: {MAPPING}, got a list (['a', 'b'])"),
    ("model: [a]\n", "line 1: invalid field `model`: expected text, got a list (['a'])"),
    ("limits:\n  models: fraud\n", f"line 2: invalid field `limits.models`: {LIST}, got text ('fraud')"),
])
def test_a_setting_of_the_wrong_shape_is_said_in_plain_words(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load(path)
    assert str(err.value) == f"config {path}, {message}"


def test_scalar_mismatches_keep_their_words_and_hints(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("ab:\n  arms: {A: '50%', B: 0.5}\n")
    with pytest.raises(ConfigError, match=r"Expected `float`, got `str` \('50%'\) \(percentages\?"):
        load(path)
