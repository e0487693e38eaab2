"""The config refuses at load exactly the model, variant and version names the event decoder refuses (name_rule):
surrounding whitespace, control and invisible characters, names that read as reserved. Tryout: `model: " fraud"`
loaded, and no event could ever be counted under it (events named " fraud" are dead letters)."""

from __future__ import annotations

import msgspec
import pytest

from driftline.config import ConfigError, from_dict
from driftline.core.events import DeadLetter, decode
from driftline.name_rule import bad_name

BAD = [" fraud", "fraud ", "fr\x01aud", "fr\u200baud", "\ufefffraud", "fr\u2028aud", "fr\ue000aud"]
"""Names the decoder dead-letters (tests/test_event_names.py holds the full rule)."""

TRIGGER = {"name": "r", "metric": "recall", "op": "<", "value": 0.7}


def _configs(name: str) -> list[tuple[str, dict]]:
    """(field the error must name, config) for every place the config holds a model, variant or version name."""
    return [
        ("model", {"model": name}),
        ("ab.arms", {"ab": {"arms": {"A": 0.5, name: 0.5}}}),
        ("ab.control", {"ab": {"control": name, "arms": {"A": 1.0}}}),
        ("limits.models", {"limits": {"models": ["fraud", name]}}),
        ("limits.variants", {"limits": {"variants": {name: ["A"]}}}),
        ("limits.variants.fraud", {"limits": {"variants": {"fraud": ["A", name]}}}),
        ("limits.versions.fraud", {"limits": {"versions": {"fraud": [name]}}}),
        ("triggers[0].variant", {"triggers": [{**TRIGGER, "variant": name}]}),
    ]


@pytest.mark.parametrize("name", BAD, ids=ascii)
def test_a_name_the_decoder_refuses_is_refused_at_load_naming_the_field(name: str) -> None:
    event = {"type": "prediction", "prediction_id": "p", "model": name, "ts": 0, "score": 0.5}
    dead = decode(msgspec.json.encode(event), "t", 0, 0)
    assert bad_name(name) and isinstance(dead, DeadLetter) and dead.reason == "wrong_type"  # the decoder's rule
    for field, cfg in _configs(name):
        with pytest.raises(ConfigError) as err:
            from_dict(cfg)
        assert f"invalid field `{field}`: " in str(err.value), (field, str(err.value))
        assert "could never match one" in str(err.value) or "reserved" in str(err.value)


@pytest.mark.parametrize("name", ["ALL", "__OTHER__"])
def test_names_that_read_as_reserved_are_refused_as_the_label_gate_refuses_them(name: str) -> None:
    for field, cfg in (("ab.arms", {"ab": {"arms": {"A": 0.5, name: 0.5}}}),
                       ("limits.models", {"limits": {"models": [name]}})):
        with pytest.raises(ConfigError, match=rf"invalid field `{field}`: .*reserved"):
            from_dict(cfg)


@pytest.mark.parametrize("name", ["fraud model", "Fraud", "fraud-v2.1", "détection", "欺诈"])
def test_clean_names_with_inner_spaces_and_any_script_still_load(name: str) -> None:
    for _, cfg in _configs(name):
        if "ab" in cfg and "control" in cfg["ab"]:
            cfg["ab"]["arms"] = {name: 1.0}
        from_dict(cfg)
