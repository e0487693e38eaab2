"""A reference set by a driftline from before calibrated estimates (its stored profile has no `score_labels`) gives
no calibrated estimate after an upgrade. It was reported as `no_reference_labels`, 'the reference has no labelled
scores to calibrate on', the reason of a reference over an unlabelled range, with no hint that setting it again
mends it (SRE upgrade tryout from dc82e8b: calibration's `calibrated` block was null where a database written by
main alone had one). Now such a reference reads `reference_predates_labels`, in words 'set it again'."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import create_engine, text

from driftline.cli import main

from helpers import simulated_db

END = "2026-11-30T00:00:00Z"


@pytest.fixture
def db(tmp_path) -> list[str]:
    db = simulated_db(tmp_path, END)
    assert main([*db, "reference", "set", "--from", "2026-11-24T00:00:00Z", "--to", "2026-11-27T00:00:00Z"]) == 0
    return db


def _strip_labels(url: str) -> None:
    """Store the active profile as a driftline before calibrated estimates did: without its labelled scores."""
    engine = create_engine(url)
    with engine.begin() as conn:
        for ref_id, profile in conn.execute(text("SELECT id, profile FROM reference_profiles")).all():
            doc = json.loads(profile)
            doc.pop("score_labels"), doc.pop("score_labels_by_variant")
            conn.execute(text("UPDATE reference_profiles SET profile = :p WHERE id = :i"),
                         {"p": json.dumps(doc), "i": ref_id})
    engine.dispose()
    from driftline.readouts import drift  # profiles are cached in the process by id and creation time, which an
    drift._profiles.clear()                # older version's row keeps: a fresh process reads it as stored


def _calibrated(db: list[str], capsys) -> tuple[dict, str]:
    assert main([*db, "calibration", "--at", END, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)["calibrated"]
    assert main([*db, "calibration", "--at", END]) == 0
    return doc, " ".join(capsys.readouterr().out.split())


def test_a_reference_from_before_calibrated_estimates_says_set_it_again(db, capsys) -> None:
    assert _calibrated(db, capsys)[0]["calibration"] is not None  # as set by this version: a map to estimate with
    _strip_labels(db[1])
    doc, out = _calibrated(db, capsys)
    assert doc["reasons"] == ["reference_predates_labels"] and doc["calibration"] is None
    assert "NOT TRUSTED: the reference was set by a driftline that kept no labelled scores" in out
    assert "set it again (`driftline reference set`)" in out
    assert main([*db, "reference", "set", "--from", "2026-11-24T00:00:00Z", "--to", "2026-11-27T00:00:00Z"]) == 0
    capsys.readouterr()
    again = _calibrated(db, capsys)[0]  # setting it again mends it
    assert again["calibration"] is not None and "reference_predates_labels" not in again["reasons"]
