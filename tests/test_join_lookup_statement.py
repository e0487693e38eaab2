"""bulk.load_join's SQLite lookup reads both join tables in one statement (sqlite_lookup: the ids as a json_each
array, or per chunk of ids a VALUES list padded with NULLs, with and without the MATERIALIZED hint, which SQLite
< 3.35 lacks): it returns what a plain read of each table by key returns, records in key order, across the padded
chunk sizes; each prediction with its label in force (its outcome row's label, ts and not implicit when one is held
for its id: issue 18)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Connection

from driftline.core.engine import JoinView, OutcomeRecord, PredRecord, label_in_force
from driftline.storage import bulk, sqlite_lookup
from driftline.storage.store import Store


def _reference(conn: Connection, ids: list[str]) -> list[Any]:
    """Every stored row of these ids, read table by table in key order (what the lookup must give)."""
    wanted = set(ids)
    preds = [r for r in bulk.pred_records(conn.exec_driver_sql(
        f"SELECT {bulk._PRED_SELECT} FROM predictions ORDER BY prediction_id, model, variant").fetchall())
        if r.prediction_id in wanted]
    outs = [OutcomeRecord(p, lb, ts, sh, bool(m)) for p, lb, ts, sh, m in conn.exec_driver_sql(
        f"SELECT {bulk._OUT_COLS} FROM outcomes ORDER BY prediction_id").fetchall() if p in wanted]
    by_id = {o.prediction_id: o for o in outs}
    for rec in preds:
        label_in_force(rec, by_id.get(rec.prediction_id))
    return [preds, outs]


def _read(view: JoinView) -> list[Any]:
    return [[r for recs in view.preds.values() for r in recs], list(view.outcomes.values())]


@pytest.mark.parametrize("route", ["json_each", "MATERIALIZED ", ""])
@pytest.mark.parametrize("n", [1, 17, sqlite_lookup.LOOKUP_IDS, sqlite_lookup.LOOKUP_IDS + 3])
def test_one_statement_lookup_reads_what_each_table_holds(tmp_path: Any, monkeypatch: pytest.MonkeyPatch,
                                                          route: str, n: int) -> None:
    if route == "json_each" and not sqlite_lookup.HAS_JSON_EACH:
        pytest.skip("this SQLite has no json_each")
    if route == "MATERIALIZED ":
        import sqlite3
        if sqlite3.sqlite_version_info < (3, 35):
            pytest.skip("this SQLite has no MATERIALIZED hint")
    if route != "json_each":  # the chunked route (ids JSON would escape, or no json_each)
        monkeypatch.setattr(sqlite_lookup, "HAS_JSON_EACH", False)
        monkeypatch.setattr(sqlite_lookup, "_MATERIALIZED", route)
    store = Store(f"sqlite:///{tmp_path / 'l.db'}")
    store.migrate()
    preds = [PredRecord(f"p{i:04d}", m, "v1", v, float(i), 0.25, i % 2 == 0, i % 3, None if i % 4 else 1,
                        None if i % 4 else 2.5, i % 5 == 0, None if i % 6 else {"c": str(i)})
             for i in range(0, 2 * n, 2) for m, v in (("m", "A"), ("m", "B"), ("n", "A"))[:1 + i % 3]]
    outs = [OutcomeRecord(f"p{i:04d}", i % 2, float(i), i % 3, i % 4 == 0) for i in range(0, 2 * n, 3)]
    with store.write() as conn:
        bulk.write_predictions(conn, "sqlite", preds)
        bulk.write_outcomes(conn, "sqlite", outs)
    ids = [f"p{i:04d}" for i in range(2 * n)] + ["", "absent", "p0000"]  # misses, a repeat
    with store.read() as conn:
        view = bulk.load_join(conn, "sqlite", ids)
        assert _read(view) == _reference(conn, ids)
        assert view.stored is not None  # the keys found: the writes insert the others without a statement journal
        assert view.stored.preds == {r.key for r in preds} and view.stored.outcomes == {o.prediction_id for o in outs}
    assert sum(map(len, view.preds.values())) == len(preds) and len(view.outcomes) == len(outs)
    store.close()
