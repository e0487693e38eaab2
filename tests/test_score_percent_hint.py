"""A score sent as a percentage is dead-lettered with the fix named (churn tryout: a churn model sending 73.2 for
73.2 % read only "Expected `float` <= 1.0 - at `$.score`")."""

from __future__ import annotations

import json

from driftline import cli
from driftline.core.events import decode


def _score(score: object) -> bytes:
    return json.dumps({"type": "prediction", "prediction_id": "b1", "model": "churn", "ts": 1786000000,
                       "score": score}).encode()


def test_a_percentage_score_gets_the_hint() -> None:
    d = decode(_score(73.2), "f", 0, 0)
    assert d.reason == "score_out_of_range"
    assert d.detail.endswith("(a percentage? scores are probabilities in [0, 1]: send 0.732)")
    assert decode(_score(100), "f", 0, 0).detail.endswith("send 1)")
    for other in (730, -0.2, 1e300):  # not a percentage: the plain refusal
        assert "percentage" not in decode(_score(other), "f", 0, 0).detail


def test_the_hint_reaches_dead_letters(tmp_path, capsys) -> None:
    path = tmp_path / "e.jsonl"
    path.write_bytes(_score(55) + b"\n")
    db = ["--db", f"sqlite:///{tmp_path / 'd.db'}"]
    assert cli.main([*db, "replay", str(path), "--json"]) == 0
    capsys.readouterr()
    assert cli.main([*db, "dead-letters", "--json"]) == 0
    (letter,) = json.loads(capsys.readouterr().out)["recent"]
    assert letter["reason"] == "score_out_of_range" and "send 0.55)" in letter["detail"]
