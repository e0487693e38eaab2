"""Counts printed with their nouns agree with the number (tryout: "1 events of this replay were dead-lettered",
"~1 days"): numbers.counted, and the replay warning and A/B power lines that printed the plural for one."""

from __future__ import annotations

import json

from driftline import numbers
from driftline.cli import main
from driftline.readouts.ab_verdict import _power


def test_counted_takes_the_singular_for_one() -> None:
    assert numbers.counted(1, "event") == "1 event" and numbers.counted(0, "event") == "0 events"
    assert numbers.counted(1200, "labelled positive") == "1,200 labelled positives"
    assert numbers.counted(2, "query", "queries") == "2 queries" and numbers.were(1) == "was"


def test_one_event_past_the_horizon_is_one_event(tmp_path, capsys) -> None:
    db = f"sqlite:///{tmp_path / 'a.db'}"
    live, old = tmp_path / "live.jsonl", tmp_path / "old.jsonl"
    for path, pid, ts in ((live, "live-1", "2026-12-05T01:00:00Z"), (old, "old-1", "2026-01-05T01:00:00Z")):
        path.write_text(json.dumps({"type": "prediction", "prediction_id": pid, "model": "fraud", "ts": ts,
                                    "score": 0.2}) + "\n")
    assert main(["--db", db, "replay", str(live)]) == 0
    capsys.readouterr()
    assert main(["--db", db, "replay", str(old), "--json"]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "1 event of this replay was dead-lettered past_horizon: it is older than the label horizon" in err
    assert "so it could be neither joined" in err


def test_power_sentence_says_one_day() -> None:
    comp = {"power": {"mde": 0.1, "n_control": 40, "n_treatment": 41, "more_per_arm": 1, "target_diff": 0.05,
                      "days": 1}}
    text = _power(comp)
    assert "~1 more labelled positive per arm (~1 day at the current rate)" in text
