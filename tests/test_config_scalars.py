"""A YAML number or boolean where the config wants text is refused naming the field, as written, with how to quote
it (tryout: `model: 1e3` became the float 1000.0 and the error showed `(1000.0)`; a number key was "invalid top
level"). Every text setting behaves the same: names, labels, mapping keys."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from driftline.config import ConfigError, load
from driftline.config_scalars import YAML_BOOLEANS


def _refused(tmp_path: Path, text: str) -> str:
    p = tmp_path / "c.yaml"
    p.write_text(text)
    with pytest.raises(ConfigError) as err:
        load(p)
    return re.sub(rf"^config {re.escape(str(p))}(, line \d+)?: ", "", str(err.value))  # the line: test_config_lines


@pytest.mark.parametrize("text, field, written", [
    ("model: 1e3\n", "model", "1e3"),
    ("model: 123\n", "model", "123"),
    ("model: 0x1F\n", "model", "0x1F"),
    ("slices: [country, 2024]\n", "slices[1]", "2024"),
    ("ab: {control: 1, arms: {'1': 0.5, B: 0.5}}\n", "ab.control", "1"),
    ("kafka: {group_id: 12}\n", "kafka.group_id", "12"),
    ("limits: {variants: {fraud: [A, 1.5]}}\n", "limits.variants.fraud[1]", "1.5"),
    ("triggers: [{name: r, metric: recall, op: '<', value: 0.7, window: 7d, variant: 2}]\n", "triggers[0].variant",
     "2"),
])
def test_a_number_given_as_a_name_is_refused_as_written(tmp_path: Path, text: str, field: str, written: str) -> None:
    assert _refused(tmp_path, text) == (f"invalid field `{field}`: {written} is a number; quote it (\"{written}\") to "
                                        "use it as a name")


def test_a_boolean_given_as_a_name_is_refused_as_written(tmp_path: Path) -> None:
    assert _refused(tmp_path, "domain: {positive: yes}\nmodel: yes\n").startswith("unknown field `domain.positive`")
    assert _refused(tmp_path, "model: yes\n") == ('invalid field `model`: yes is a boolean' + YAML_BOOLEANS
                                                  + '; quote it ("yes") to use it as a name')


@pytest.mark.parametrize("text, field, written", [
    ("model: no\n", "model", "no"), ("model: On\n", "model", "On"),
    ("limits: {variants: {fraud: [SE, NO]}}\n", "limits.variants.fraud[1]", "NO"),  # the Norway problem
])
def test_a_yaml_1_1_boolean_word_given_as_a_name_says_yaml_read_it_so(tmp_path: Path, text: str, field: str,
                                                                      written: str) -> None:
    """YAML 1.1 reads yes/no/on/off (and Norway's NO) as booleans: the error says so, not just "is a boolean"."""
    assert _refused(tmp_path, text) == (f"invalid field `{field}`: {written} is a boolean to YAML (unquoted yes, no, "
                                        f"on, off, true and false are, capitalised too); quote it (\"{written}\") "
                                        "to use it as a name")


@pytest.mark.parametrize("text, field, written, expected", [
    ("threshold: yes\n", "threshold", "yes", "a number here, e.g. 0.5 (the default)"),
    ("threshold: Off\n", "threshold", "Off", "a number here, e.g. 0.5 (the default)"),
    ("drift: {psi_warning: on}\n", "drift.psi_warning", "on", "a number here, e.g. 0.1 (the default)"),
    ("max_features: yes\n", "max_features", "yes", "a whole number here, e.g. 50 (the default)"),
    ("ab: {arms: {A: yes, B: 0.5}}\n", "ab.arms.A", "yes", "a number here"),
    ("targets: {recall: no}\n", "targets.recall", "no", "a number here"),
    ("triggers: [{name: r, metric: recall, op: '<', value: yes}]\n", "triggers[0].value", "yes", "a number here"),
    ("triggers: [{name: r, metric: recall, op: '<', value: 0.7, min_n: on}]\n", "triggers[0].min_n", "on",
     "a whole number here"),
])
def test_a_boolean_given_as_a_number_says_yaml_read_it_so(tmp_path: Path, text: str, field: str, written: str,
                                                          expected: str) -> None:
    """Tryout: `threshold: yes` said only "Expected `float`, got `bool` (True)"."""
    kind = "a whole number" if "whole" in expected else "a number"
    assert _refused(tmp_path, text) == (f"invalid field `{field}`: {written} is a boolean{YAML_BOOLEANS}, not {kind}: "
                                        f"write {expected}")


def test_a_boolean_given_as_a_kafka_option_says_yaml_read_it_so(tmp_path: Path) -> None:
    assert _refused(tmp_path, "kafka: {options: {acks: yes}}\n").endswith(
        "(YAML reads an unquoted yes, no, on, off, true or false as a boolean: write the number)")
    assert _refused(tmp_path, "kafka: {options: {security_protocol: no}}\n").endswith(
        "(YAML reads an unquoted yes, no, on, off, true or false as a boolean: quote the text)")



def test_a_date_given_as_a_name_is_refused_as_written(tmp_path: Path) -> None:
    """Tryout: `model: 2026-12-01` said "Expected `str`, got `date` (datetime.date(2026, 12, 1))"."""
    assert _refused(tmp_path, "model: 2026-12-01\n") == ('invalid field `model`: 2026-12-01 is a date; quote it '
                                                         '("2026-12-01") to use it as a name')
    assert _refused(tmp_path, "features: {2026-12-01: numeric}\n") == (
        'invalid field `features`: key 2026-12-01 is a date; quote it ("2026-12-01") to use it as a name')


@pytest.mark.parametrize("text, field, written", [
    ("features: {amount: numeric, 1e3: categorical, 7: numeric}\n", "features", "1e3"),
    ("ab: {arms: {A: 0.5, 2: 0.5}}\n", "ab.arms", "2"),
    ("limits: {variants: {101: [A]}}\n", "limits.variants", "101"),
])
def test_a_number_given_as_a_key_is_refused_as_written(tmp_path: Path, text: str, field: str, written: str) -> None:
    assert _refused(tmp_path, text) == (f"invalid field `{field}`: key {written} is a number; quote it "
                                        f"(\"{written}\") to use it as a name")


def test_quoted_numbers_are_names(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_text('model: "1e3"\nslices: ["2024"]\nfeatures: {"2024": categorical}\nthreshold: 5e-1\n')
    cfg = load(p)
    assert cfg.model == "1e3" and cfg.slices == ["2024"] and cfg.features == {"2024": "categorical"}
    assert cfg.threshold == 0.5  # numbers stay numbers where the config wants a number


def test_a_quoted_value_refused_too_gets_that_fields_own_error(tmp_path: Path) -> None:
    """Quoting `window: 7` would not help: the duration's own error is the one to show."""
    assert _refused(tmp_path, "window: 7\n").startswith("invalid field `window`: expected a duration")
