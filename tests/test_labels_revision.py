"""Migration 0012_labelsapart: a store written under the label-in-force rule (prediction rows written once, the
label in its outcome row) is refused by a driftline without the revision (SchemaTooNew) instead of being read with
its outcome-labelled predictions as unlabelled; the downgrade folds every outcome's label into its predictions'
rows, which is what such a driftline reads."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import text

from driftline.config import from_dict
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.storage import revisions
from driftline.storage.errors import SchemaTooNew
from driftline.storage.store import Store

from helpers import outcome, pred

T0 = 1_790_000_000.0
REVISION = "0012_labelsapart"


def _written(tmp: Path) -> tuple[Store, str]:
    """A store where outcomes labelled predictions of earlier batches (rows left as first written), a prediction
    came after its outcome, one outcome is a correction and one prediction has no outcome."""
    url = f"sqlite:///{tmp / 'labels.db'}"
    store = Store(url)
    store.migrate()
    pipe = Pipeline(from_dict({}), store, clock=lambda: T0 + 30 * 86400)
    pipe.process_batch([RawRecord("file:a", 0, 0, pred("x", 0.9, T0)), RawRecord("file:a", 0, 1, pred("y", 0.2, T0)),
                        RawRecord("file:a", 0, 2, pred("z", 0.7, T0))])
    pipe.process_batch([RawRecord("file:b", 0, 0, outcome("x", 1, T0 + 60)),
                        RawRecord("file:b", 0, 1, outcome("w", 0, T0 + 70))])
    pipe.process_batch([RawRecord("file:b", 0, 2, outcome("x", 0, T0 + 90)),
                        RawRecord("file:a", 0, 3, pred("w", 0.4, T0 + 80))])
    return store, url


def _rows(store: Store) -> list[tuple]:
    with store.read() as conn:
        return [tuple(r) for r in conn.execute(text(
            "SELECT prediction_id, label, label_ts, implicit FROM predictions ORDER BY prediction_id"))]


def test_a_store_written_under_the_rule_is_refused_by_a_driftline_without_the_revision(tmp_path: Path) -> None:
    store, _ = _written(tmp_path)
    try:
        with store.read() as conn:
            stored = revisions.stored_revisions(conn)
    finally:
        store.close()
    assert REVISION in stored
    older = tmp_path / "versions"
    shutil.copytree(revisions.VERSIONS, older)
    (older / f"{REVISION}.py").unlink()
    revisions.refuse_newer_schema(stored)  # this build: accepted
    with pytest.raises(SchemaTooNew):
        revisions.refuse_newer_schema(stored, versions=older)


def test_the_downgrade_folds_every_outcome_into_its_predictions(tmp_path: Path) -> None:
    store, url = _written(tmp_path)
    try:
        assert _rows(store)[0] == ("w", 0, T0 + 70, 0)  # came after its outcome: written with its label
        assert _rows(store)[1] == ("x", None, None, 0)  # labelled (then corrected) later: row as first written
        cfg = Config()
        cfg.set_main_option("script_location", str(revisions.VERSIONS.parent))
        cfg.set_main_option("sqlalchemy.url", url)
        command.downgrade(cfg, f"{REVISION}@-1")
        with store.read() as conn:
            assert REVISION not in revisions.stored_revisions(conn)
        assert _rows(store) == [("w", 0, T0 + 70, 0), ("x", 0, T0 + 90, 0), ("y", None, None, 0),
                                ("z", None, None, 0)]
    finally:
        store.close()
