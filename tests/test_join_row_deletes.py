"""SQLite drops a batch's join rows (JoinRows.write: expiry, mostly) by primary-key lookups: exactly the rows named
go, on dirty keys, and no statement scans the table (the row-value IN list scanned the (shard, ts) index once per
500 keys, so the end-of-replay expiry of a 4.9 M-event, 120-day replay ran for many minutes)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import event

from driftline.core.engine import EngineResult
from driftline.storage.store import Store

TEXT = st.one_of(st.sampled_from(["", "é", "\U0001f600", "a\0b", "x" * 200]), st.text(max_size=4))
KEY = st.tuples(TEXT, st.sampled_from(["fraud", "m\u00e9"]), st.sampled_from(["A", "B", ""]))
_INSERT = ("INSERT INTO predictions (prediction_id, model, variant, model_version, ts, score, flagged, shard, label, "
           "label_ts, implicit) VALUES (?, ?, ?, 'v', ?, 0.5, 0, ?, NULL, NULL, 0)")


def _keys(store: Store) -> set[tuple[str, str, str]]:
    with store.read() as conn:
        return {tuple(r) for r in conn.exec_driver_sql("SELECT prediction_id, model, variant FROM predictions")}


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(st.lists(KEY, unique=True, max_size=40), st.data())
def test_exactly_the_named_rows_are_dropped(tmp_path: Any, stored: list[Any], data: Any) -> None:
    store = Store(f"sqlite:///{tmp_path / 'del.db'}")
    store.migrate()
    with store.write() as conn:
        conn.exec_driver_sql("DELETE FROM predictions")
        if stored:
            conn.exec_driver_sql(_INSERT, [(*k, float(i), i % 3) for i, k in enumerate(stored)])
    gone = set(data.draw(st.lists(st.sampled_from(stored), unique=True))) if stored else set()
    absent = set(data.draw(st.lists(KEY, max_size=5))) - set(stored)
    with store.write() as conn:
        store.join.write(conn, EngineResult(deletes=gone | absent))
    assert _keys(store) == set(stored) - gone
    store.close()


def test_no_delete_scans_the_join_table(tmp_path: Any) -> None:
    store = Store(f"sqlite:///{tmp_path / 'plan.db'}")
    store.migrate()
    keys = [(f"id{i}", "fraud", "A") for i in range(1200)]  # more than one chunk of the IN-list route
    with store.write() as conn:
        conn.exec_driver_sql(_INSERT, [(*k, float(i), 0) for i, k in enumerate(keys)])
    seen: list[tuple[str, Any]] = []

    def spy(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        if statement.lstrip().upper().startswith("DELETE FROM PREDICTIONS"):
            seen.append((statement, parameters[0] if executemany else parameters))

    event.listen(store.engine, "before_cursor_execute", spy)
    with store.write() as conn:
        store.join.write(conn, EngineResult(deletes=set(keys[:1100])))
    event.remove(store.engine, "before_cursor_execute", spy)
    assert _keys(store) == set(keys[1100:])
    assert seen
    with store.read() as conn:
        for statement, parameters in seen:
            plan = " | ".join(str(r[-1]) for r in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters))
            assert "SCAN" not in plan and "PRIMARY KEY" in plan, plan
    store.close()
