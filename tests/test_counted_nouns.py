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


def test_replay_warnings_about_one_prediction_are_singular() -> None:
    """Verification tryout: "1 predictions stored by this replay were expired during it" and "1 duplicate
    predictions of this replay conflict with the copy stored first"."""
    from collections import Counter

    from driftline.commands.replay_warnings import conflict_warning, expired_warning
    from driftline.core.engine import CONFLICTING
    from driftline.ingest.pipeline import EXPIRED_STORED_NOW, BatchResult

    expired = expired_warning(Counter({EXPIRED_STORED_NOW: 1}), None, "90d")
    assert expired is not None and expired.startswith(
        "1 prediction stored by this replay was expired during it: it is more than the label horizon (90d) older "
        "than the newest event and has no outcome, so it counts as expired, never labelled, and an outcome "
        "arriving for it later cannot join.")
    assert expired_warning(Counter({EXPIRED_STORED_NOW: 2}), None, "90d").startswith(
        "2 predictions stored by this replay were expired during it: they are")
    total = BatchResult()
    total.counters[CONFLICTING] = 1
    total.conflict_example = "p-1"
    conflict = conflict_warning(total)
    assert conflict is not None and conflict.startswith(
        "1 duplicate prediction of this replay conflicts with the copy stored first")
    assert "the copy stored first counts and that duplicate is ignored" in conflict
    total.counters[CONFLICTING] = 3
    assert conflict_warning(total).startswith("3 duplicate predictions of this replay conflict with the copy")
