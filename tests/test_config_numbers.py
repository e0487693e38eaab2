"""Numbers in the config file read as the CLI's options read them: a whole number may be written `1e3` or `1000.0`
(YAML and JSON give a float); `1.5` where a whole number is wanted, non-finite and out-of-range values are refused
naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from driftline.config import ConfigError, from_dict, load


@pytest.mark.parametrize(("section", "read", "value"), [
    ({"limits": {"max_features": 1e3}}, lambda c: c.limits.max_features, 1000),
    ({"limits": {"max_features": 1000.0}}, lambda c: c.limits.max_features, 1000),
    ({"exporter": {"port": 9.1e3}}, lambda c: c.exporter.port, 9100),
    ({"drift": {"numeric_bins": 20.0}}, lambda c: c.drift.numeric_bins, 20),
    ({"triggers": [{"name": "t", "metric": "recall", "op": "<", "value": 0.7, "min_n": 5e1}]},
     lambda c: c.triggers[0].min_n, 50),
    ({"costs": {"currency": "EUR", "monthly_volume": 1e5}}, lambda c: c.costs.monthly_volume, 100_000),
    ({"kafka": {"batch_max_bytes": 1.6777216e7}}, lambda c: c.kafka.batch_max_bytes, 16 << 20),
])
def test_a_whole_number_written_as_a_float_is_that_integer(section, value, read) -> None:  # type: ignore[no-untyped-def]
    """Tryout: `limits: {max_features: 1e3}` was refused ("Expected `int`, got `float` (1000.0)") while
    `simulate --per-day 1e3` is 1000."""
    got = read(from_dict(section))
    assert got == value and type(got) is int


def test_float_fields_keep_their_floats() -> None:
    config = from_dict({"threshold": 1.0, "targets": {"recall": 1.0}, "ab": {"arms": {"A": 1.0}}})
    assert type(config.threshold) is float and type(config.targets["recall"]) is float


@pytest.mark.parametrize(("text", "message"), [
    ("limits:\n  max_features: 1.5\n", r"line 2: invalid field `limits.max_features`: 1.5 is not a whole number$"),
    ("drift:\n  top_k: 2.55e1\n", r"invalid field `drift.top_k`: 25.5 is not a whole number$"),
    ("triggers:\n- {name: t, metric: recall, op: '<', value: 0.7, min_n: 0.5}\n",
     r"invalid field `triggers\[0\].min_n`: 0.5 is not a whole number$"),
    ("exporter:\n  port: 7e4\n", r"invalid field `exporter.port`: Expected `int` <= 65535, got 70000$"),
    ("limits:\n  max_features: 1e30\n", r"invalid field `limits.max_features`: 1e\+30 is too large to be a whole number"),
    ("limits:\n  max_features: .inf\n", r"invalid field `limits.max_features`: inf is not a finite number"),
    ("limits:\n  max_features: .nan\n", r"invalid field `limits.max_features`: nan is not a finite number"),
    ("limits:\n  max_features: -1e3\n", r"invalid field `limits.max_features`: Expected `int` >= 1, got -1000$"),
])
def test_what_is_not_a_whole_number_in_range_is_refused_naming_the_field(
        tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load(path)


def test_the_whole_number_pass_visits_each_aliased_list_once() -> None:
    """A list shared through YAML aliases (9 to the 8th values expanded) is walked once per type, as the finite
    check does (test_config.py); counted on iteration, not timed."""
    from driftline.config import Config
    from driftline.config_fields import whole_floats

    walked = []

    class Counted(list):
        def __iter__(self):  # type: ignore[no-untyped-def]
            walked.append(1)
            return super().__iter__()

    level: list = Counted([{"name": "t", "metric": "recall", "op": "<", "value": 0.7, "min_n": 3.0}] * 9)
    out = whole_floats(Config, {"triggers": level})
    assert out["triggers"][0]["min_n"] == 3 and type(out["triggers"][0]["min_n"]) is int and len(walked) == 1
