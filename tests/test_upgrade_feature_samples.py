"""After an upgrade from a driftline before multivariate drift (migration 0009_mvsample), the buckets stored before it
have no feature samples, and none can be made from them. The drift note used to say `run driftline reference set
again`; doing so over a range stored before the upgrade froze an empty sample and `drift` then said only 'fewer than
50 sampled rows in the window or in a half of the reference sample' (SRE upgrade tryout from c2024b6). Now
`reference set` says how many of the range's predictions have no sample and what to do, and `drift` names the
reason instead of the row count."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from driftline.cli import main

END = "2026-11-30T00:00:00Z"
UPGRADED = "2026-11-27T00:00:00Z"
"""Buckets before this were stored by the old version: their feature-sample rows are removed."""


@pytest.fixture(scope="module")
def upgraded_db(tmp_path_factory) -> list[str]:
    tmp = tmp_path_factory.mktemp("upgraded")
    events = tmp / "events.jsonl"
    db = ["--db", f"sqlite:///{tmp / 'd.db'}"]
    assert main([*db, "simulate", "--days", "6", "--per-day", "300", "--end", END, "--out", str(events)]) == 0
    assert main([*db, "replay", str(events)]) == 0
    engine = create_engine(db[1])
    with engine.begin() as conn:  # what 0009_mvsample leaves of the buckets stored before it: no sample rows
        conn.execute(text("DELETE FROM feature_samples WHERE bucket_start < 1795737600"))  # 2026-11-27
    engine.dispose()
    return db


def _set(db: list[str], start: str, end: str, capsys) -> tuple[dict, str]:
    assert main([*db, "reference", "set", "--from", start, "--to", end, "--force", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert main([*db, "reference", "set", "--from", start, "--to", end, "--force"]) == 0
    return doc, " ".join(capsys.readouterr().out.split())


def _multivariate(db: list[str], capsys) -> dict:
    assert main([*db, "drift", "--at", END, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["multivariate"]


def test_a_reference_over_a_range_stored_before_the_upgrade_says_why_it_has_no_sample(upgraded_db, capsys) -> None:
    doc, out = _set(upgraded_db, "2026-11-24T00:00:00Z", "2026-11-26T00:00:00Z", capsys)
    assert doc["unsampled_predictions"] == doc["n"] > 100
    assert f"{doc['n']:,} of the range's {doc['n']:,} predictions were stored by a driftline from before " \
           "multivariate drift (migration 0009_mvsample)" in out
    assert "no verdict against this reference" in out and "reference set --file PATH" in out
    mv = _multivariate(upgraded_db, capsys)
    assert mv["drifted"] is None
    assert mv["note"].startswith(f"the active reference's sample holds 0 rows: {doc['n']:,} of its {doc['n']:,} "
                                 "predictions were stored by a driftline from before multivariate drift")
    assert "range stored since the upgrade" in mv["note"]


def test_a_reference_stored_since_the_upgrade_has_its_sample_and_no_note(upgraded_db, capsys) -> None:
    doc, out = _set(upgraded_db, "2026-11-27T00:00:00Z", "2026-11-29T00:00:00Z", capsys)
    assert doc["unsampled_predictions"] == 0
    assert "note:" not in out
    mv = _multivariate(upgraded_db, capsys)
    assert mv["n"]["reference_fit"] > 50 and "stored by a driftline" not in (mv.get("note") or "")
