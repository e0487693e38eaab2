"""Copies of a prediction that disagree with the one stored first (new-user tryout): they were counted as
duplicates exactly like identical copies, so results that depend on which copy arrived first went unseen. They are
now counted apart (replay summary `conflicting_duplicates` with a warning naming one id, and the exporter's
`driftline_conflicting_duplicates_total`), while `duplicate_predictions` still counts every copy."""

from __future__ import annotations

import json

from prometheus_client import CollectorRegistry

from driftline.cli import main
from driftline.config import from_dict
from driftline.exporter.collector import SnapshotCollector
from driftline.storage.store import Store

from helpers import pred

T0 = 1_795_600_800.0  # 2026-11-25T10:00:00Z


def _replay(capsys, db: str, path, *extra: str) -> tuple[dict, str]:
    assert main(["--db", db, "replay", str(path), "--json", *extra]) == 0
    out, err = capsys.readouterr()
    return json.loads(out), " ".join(err.split())


def test_conflicting_copies_are_counted_and_warned_about_exact_ones_are_not(tmp_path, capsys) -> None:
    exact = tmp_path / "exact.jsonl"
    exact.write_bytes(b"\n".join([pred("c1", 0.7, T0), pred("c1", 0.7, T0)]) + b"\n")
    db = f"sqlite:///{tmp_path / 'd.db'}"
    doc, err = _replay(capsys, db, exact)
    assert (doc["duplicate_predictions"], doc["conflicting_duplicates"], doc["warnings"]) == (1, 0, [])
    conflicting = tmp_path / "conflicting.jsonl"  # against the stored copy, and within the file
    conflicting.write_bytes(b"\n".join([pred("c1", 0.2, T0), pred("c1", 0.7, T0 + 60), pred("c1", 0.7, T0),
                                        pred("c1", 0.7, T0, model_version="v2"), pred("c2", 0.4, T0),
                                        pred("c2", 0.5, T0)]) + b"\n")
    doc, err = _replay(capsys, db, conflicting, "--batch-size", "2")
    assert (doc["predictions"], doc["duplicate_predictions"], doc["conflicting_duplicates"]) == (1, 5, 4)
    (warning,) = doc["warnings"]
    assert warning.startswith("4 duplicate predictions of this replay conflict with the copy stored first")
    assert "e.g. prediction_id 'c1'" in warning and "depend on which arrived first" in warning
    assert "warning: 4 duplicate predictions" in err
    store = Store(db)
    try:
        reg = CollectorRegistry()
        reg.register(SnapshotCollector(store, from_dict({"model": "fraud"}), time_basis="event"))
        assert reg.get_sample_value("driftline_conflicting_duplicates_total", {"type": "prediction"}) == 4.0
        assert reg.get_sample_value("driftline_duplicates_total", {"type": "prediction"}) == 6.0
    finally:
        store.close()


def test_a_copy_whose_own_threshold_flags_it_otherwise_is_conflicting(tmp_path, capsys) -> None:
    """The same id, score, ts and version with a `threshold` that flags the copy otherwise (0.7 at 0.8: not flagged;
    the stored copy at the config's 0.5: flagged) counted as an exact copy, so which one arrived first decided the
    flag unseen (threshold helper's finding); a threshold that flags it alike (0.6) stays an exact copy."""
    first = tmp_path / "first.jsonl"
    first.write_bytes(pred("t1", 0.7, T0) + b"\n")
    db = f"sqlite:///{tmp_path / 'd.db'}"
    _replay(capsys, db, first)
    copies = tmp_path / "copies.jsonl"  # against the stored copy, and within one batch
    copies.write_bytes(b"\n".join([pred("t1", 0.7, T0, threshold=0.6), pred("t1", 0.7, T0, threshold=0.8),
                                   pred("t2", 0.3, T0, threshold=0.2), pred("t2", 0.3, T0)]) + b"\n")
    doc, _ = _replay(capsys, db, copies)
    assert (doc["duplicate_predictions"], doc["conflicting_duplicates"]) == (3, 2)
    (warning,) = doc["warnings"]  # the warning and the terminal row name the threshold case too (tryout: they
    assert "a threshold of its own that flags it otherwise" in warning  # said score, ts or version only)
    from driftline.commands.ingest import ROW_NAMES
    assert "flag" in ROW_NAMES["conflicting_duplicates"]
