"""`driftline replay driftline.yaml` (arguments swapped) is refused before anything is stored: it stored each line
of the config as an invalid_json dead letter (136 of them for the demo's settings)."""

from __future__ import annotations

from pathlib import Path

from driftline.cli import main
from driftline.storage.store import Store


def test_replaying_a_yaml_config_is_refused_and_stores_nothing(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    config = tmp_path / "driftline.yaml"
    config.write_text("# settings\nmodel: fraud\nlabels:\n  horizon: 30d\n")
    db = tmp_path / "d.db"
    assert main(["--db", f"sqlite:///{db}", "replay", str(config)]) == 2
    assert capsys.readouterr().err.replace("\n", "").split() == (
        f"error: {config} looks like a YAML settings file, not events (one JSON object a line): nothing replayed; a "
        f"config goes to --config (`driftline --config {config} …`)").split()
    assert not db.exists()


def test_events_in_a_yml_file_are_still_replayed(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    events = tmp_path / "events.yml"
    db = f"sqlite:///{tmp_path / 'd.db'}"
    assert main(["--db", db, "simulate", "--days", "0.01", "--out", str(events)]) == 0
    assert main(["--db", db, "replay", str(events), "--json"]) == 0
    store = Store(db)
    assert store.models()
    store.close()
