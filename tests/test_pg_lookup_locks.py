"""A batch's join lookups on PostgreSQL lock no rows (issue 18): every writer takes the write lock first, so a row
lock per row found only cost the server a tuple write and a WAL record; the rows read are the same, in key order."""

from __future__ import annotations

import psycopg
import pytest
from sqlalchemy import text

from driftline.storage import bulk
from driftline.storage.store import Store


@pytest.fixture
def store(pg_store):
    return pg_store


def _fill(store: Store) -> None:
    with store.write() as conn:
        conn.execute(text(f"INSERT INTO predictions ({bulk.PRED_COLS}) VALUES (:p, 'fraud', :v, 'v1', 10.0, 0.5, "
                          "false, 3, NULL, NULL, false, NULL)"),
                     [{"p": "b", "v": "B"}, {"p": "a", "v": "B"}, {"p": "a", "v": "A"}])
        conn.execute(text("INSERT INTO outcomes (prediction_id, label, ts, shard, matched) VALUES "
                          "(:p, 1, 20.0, 3, :m)"), [{"p": "a", "m": True}, {"p": "c", "m": False}])


def test_lookup_takes_no_row_locks(store, pg_database) -> None:
    _fill(store)
    with store.write() as conn, psycopg.connect(pg_database.libpq_url, autocommit=True) as other:
        view = bulk.load_join(conn, "postgresql", ["c", "a", "b", "zz"])
        # another session may lock every row the lookup read at once (they were locked FOR UPDATE until the commit)
        locked = other.execute("SELECT prediction_id, variant FROM predictions WHERE prediction_id = ANY(%s) "
                               "ORDER BY 1, 2 FOR UPDATE NOWAIT", (["a", "b", "c"],)).fetchall()
        assert locked == [("a", "A"), ("a", "B"), ("b", "B")]
        out = other.execute("SELECT prediction_id FROM outcomes WHERE prediction_id = ANY(%s) ORDER BY 1 "
                            "FOR UPDATE NOWAIT", (["a", "c"],)).fetchall()
        assert out == [("a",), ("c",)]
    assert [(r.prediction_id, r.variant, r.label) for recs in view.preds.values() for r in recs] == [
        ("a", "A", 1), ("a", "B", 1), ("b", "B", None)]  # key order, each with its label in force
    assert sorted(view.outcomes) == ["a", "c"]
    assert view.stored is not None and view.stored.outcomes == {"a", "c"}


def test_lookup_statements_lock_nothing() -> None:
    for statement in (bulk.PG_PRED_LOOKUP, bulk.PG_OUT_LOOKUP):
        assert "FOR UPDATE" not in statement and "FOR SHARE" not in statement
        assert "ORDER BY prediction_id" in statement
