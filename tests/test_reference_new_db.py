"""`reference set --file` on a SQLite file that does not exist yet (a reference before go-live): a failure leaves no
database behind (tryout: a missing events file, a file without predictions of the model, or `--seasonality both`
exited 2 but created an empty database, which later read as "no predictions stored yet"), a success creates it.
Nothing is deleted after the fact: the database is simply not opened before the file has given a profile."""

from __future__ import annotations

import json

import pytest

from driftline.cli import main

LINES = [{"type": "prediction", "prediction_id": f"p{i}", "model": "fraud", "ts": f"2026-11-25T10:{i:02d}:00Z",
          "score": 0.1 + i / 100, "features": {"amount": 10.0 + i}} for i in range(30)]


@pytest.mark.parametrize("case", ["missing file", "no predictions", "seasonality"])
@pytest.mark.parametrize("model", [[], ["--model", "fraud"]], ids=["config model", "--model"])
def test_a_failed_reference_set_from_a_file_creates_no_database(tmp_path, capsys, case, model) -> None:
    events = tmp_path / "events.jsonl"
    rows = [{"type": "outcome", "prediction_id": "p1", "label": 1, "ts": "2026-11-25T10:00:00Z"}]
    if case != "missing file":
        events.write_text("".join(json.dumps(r) + "\n" for r in (LINES if case == "seasonality" else rows)))
    extra = ["--seasonality", "both"] if case == "seasonality" else []
    db = tmp_path / "new.db"
    assert main(["--db", f"sqlite:///{db}", "reference", "set", "--file", str(events), *model, *extra]) == 2
    assert not db.exists()
    assert capsys.readouterr().err.startswith("error: ")


def test_a_reference_set_from_a_file_creates_the_database(tmp_path, capsys) -> None:
    events = tmp_path / "events.jsonl"
    events.write_text("".join(json.dumps(r) + "\n" for r in LINES))
    db = tmp_path / "new.db"
    assert main(["--db", f"sqlite:///{db}", "reference", "set", "--file", str(events)]) == 0
    assert db.exists()
    assert main(["--db", f"sqlite:///{db}", "reference", "list", "--json"]) == 0
    assert "fraud" in capsys.readouterr().out


def test_a_file_without_the_model_names_the_models_it_holds(tmp_path, capsys) -> None:
    """Tryout: `reference set --file` on a file of model 'm' said only "no predictions of model 'fraud'"."""
    events = tmp_path / "m.jsonl"
    events.write_text("".join(json.dumps({**r, "model": "m"}) + "\n" for r in LINES))
    assert main(["--db", f"sqlite:///{tmp_path / 'r.db'}", "reference", "set", "--file", str(events)]) == 2
    assert capsys.readouterr().err.strip().endswith("(the file holds model 'm': pass --model m)")
