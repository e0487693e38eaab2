"""A misspelled `slices:` feature gets a "did you mean" (tryout: `slices: [contry]` beside a declared `country`, or
events carrying `country`, was accepted silently and every prediction's slice value was 'missing')."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from driftline.cli import main
from driftline.config import ConfigError, from_dict

from helpers import outcome, pred

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def test_a_slice_close_to_a_declared_feature_is_refused_at_load() -> None:
    with pytest.raises(ConfigError) as err:
        from_dict({"features": {"country": "categorical", "channel": "categorical"}, "slices": ["channel", "contry"]})
    assert str(err.value) == ("config: invalid field `slices[1]`: 'contry' is not declared under `features:` (did "
                              "you mean 'country'? to slice by 'contry' itself, declare it under `features:` too)")


def test_declared_slices_and_undeclared_ones_far_from_any_are_accepted() -> None:
    features = {"country": "categorical"}
    assert from_dict({"features": features, "slices": ["country", "device"]}).slices == ["country", "device"]
    assert from_dict({"slices": ["contry"]}).slices == ["contry"]  # nothing declared: checked against the data


def _slices_doc(tmp_path: Path, capsys, slices_at_ingestion: str, slices_now: str) -> dict:
    events = tmp_path / "e.jsonl"
    events.write_bytes(b"\n".join(pred(f"p{i}", 0.5, T0 + i, features={"country": "DE", "amount": 3.0})
                                  for i in range(5)) + b"\n")
    (tmp_path / "then.yaml").write_text(slices_at_ingestion)
    (tmp_path / "now.yaml").write_text(slices_now)
    db = ["--db", f"sqlite:///{tmp_path / 's.db'}"]
    assert main([*db, "--config", str(tmp_path / "then.yaml"), "replay", str(events)]) == 0
    capsys.readouterr()
    assert main([*db, "--config", str(tmp_path / "now.yaml"), "slices", "--json", "--at", "2026-01-02"]) == 0
    return {f["feature"]: f for f in json.loads(capsys.readouterr().out)["features"]}


@pytest.mark.parametrize("then", ["slices: [contry]\n", "slices: []\n"], ids=["ingested with it", "added later"])
def test_the_slices_command_names_the_feature_the_events_carry(tmp_path: Path, capsys, then: str) -> None:
    doc = _slices_doc(tmp_path, capsys, then, "slices: [contry]\n")["contry"]
    assert doc["did_you_mean"] == "country"
    assert doc["note"].startswith("no feature 'contry' is known (did you mean 'country'?)")


def test_a_real_feature_added_to_slices_later_gets_no_hint(tmp_path: Path, capsys) -> None:
    doc = _slices_doc(tmp_path, capsys, "slices: []\n", "slices: [country]\n")["country"]
    assert doc["did_you_mean"] is None and "recorded at ingestion" in doc["note"]


def test_a_slice_feature_no_prediction_carries_is_never_a_worst_slice(tmp_path: Path, capsys) -> None:
    """Drift tryout: with `slices: [country, contry]`, `slices` said "no feature 'contry' is known" and still ranked
    "contry=missing" (the whole window: recall 0.000, n=693) first among the worst slices."""
    lines = []
    for i in range(40):  # every one a missed positive: recall 0 in every slice
        lines.append(pred(f"p{i}", 0.1, T0 + i, features={"country": "DE" if i % 2 else "FR"}))
        lines.append(outcome(f"p{i}", 1, T0 + 3600 + i))
    events = tmp_path / "e.jsonl"
    events.write_bytes(b"\n".join(lines) + b"\n")
    (tmp_path / "c.yaml").write_text("slices: [country, contry]\ntargets: {recall: 0.3}\n")
    base = ["--db", f"sqlite:///{tmp_path / 's.db'}", "--config", str(tmp_path / "c.yaml")]
    assert main([*base, "replay", str(events)]) == 0
    capsys.readouterr()
    assert main([*base, "slices", "--json", "--at", "2026-01-02"]) == 0
    doc = json.loads(capsys.readouterr().out)
    contry = next(f for f in doc["features"] if f["feature"] == "contry")
    assert contry["did_you_mean"] == "country" and [v["value"] for v in contry["values"]] == ["missing"]
    assert sorted((w["feature"], w["value"]) for w in doc["worst"]) == [("country", "DE"), ("country", "FR")]
