"""SQLite's window read of buckets (Store.buckets) returns its rows in primary-key order without an ORDER BY: the
rows come as the SQL ORDER BY over the key gave them, on dirty keys, and the statement sorts nothing (its temp B-tree
copied every blob of the window, more than the read itself cost on a 4.9 M-event store)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import event

from driftline.storage.store import Store

TEXT = st.one_of(st.sampled_from(["", "m", "M", "m ", "é", "e\u0301", "\U0001f600", "\uffff", "a\0b", "x" * 50]),
                 st.text(max_size=3))
INT = st.one_of(st.sampled_from([0, 1, -1, 3599, 3600, 2**62, -(2**62), 2**63 - 2]), st.integers(-10**12, 10**12),
                st.integers(-3, 3).map(lambda h: h * 3600))
SERIES = st.lists(st.tuples(st.sampled_from(["fraud", "frauD", "fraud\u00e9"]), TEXT, TEXT), min_size=1, max_size=5)
START = st.one_of(st.integers(-3, 3).map(lambda h: h * 3600), INT)
SHARD = st.one_of(st.sampled_from([-1, 0, 1, 2, 10]), st.integers(-2, 40))
_COLS = "model, model_version, variant, bucket_start, shard"


def _stored(store: Store, keys: list[tuple[Any, ...]]) -> None:
    with store.write() as conn:
        conn.exec_driver_sql("DELETE FROM buckets")
        if keys:
            conn.exec_driver_sql(f"INSERT INTO buckets ({_COLS}, data) VALUES (?, ?, ?, ?, ?, ?)",
                                 [(*k, repr(k).encode()) for k in keys])


def _sql_order(store: Store, model: str | None, lo: int, hi: int) -> list[tuple[Any, ...]]:
    """The read as it was: the key order SQLite's ORDER BY over the primary key gives."""
    where = "bucket_start >= ? AND bucket_start < ?" + ("" if model is None else " AND model = ?")
    args = (lo, hi) if model is None else (lo, hi, model)
    with store.read() as conn:
        return [(*r[:5], bytes(r[5])) for r in conn.exec_driver_sql(
            f"SELECT {_COLS}, data FROM buckets WHERE {where} ORDER BY {_COLS}", args)]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(SERIES.flatmap(lambda series: st.lists(st.tuples(st.sampled_from(series), START, SHARD).map(
    lambda k: (*k[0], k[1], k[2])), unique=True, max_size=60)), INT, INT, st.sampled_from([None, "fraud", "frauD"]))
def test_rows_come_in_primary_key_order(tmp_path: Any, keys: list[Any], a: int, b: int, model: str | None) -> None:
    """Several rows per series (model, version, variant), their starts and shards in any order."""
    store = Store(f"sqlite:///{tmp_path / 'order.db'}")
    store.migrate()
    _stored(store, keys)
    lo, hi = min(a, b), max(a, b) + 1
    if keys and len(keys) % 4 != 0:  # a range holding every row
        lo, hi = min(k[3] for k in keys), max(k[3] for k in keys) + 1
    got = [(r.model, r.model_version, r.variant, r.bucket_start, r.shard, r.data)
           for r in store.buckets(model, lo, hi, features=False)]
    assert got == _sql_order(store, model, lo, hi)
    store.close()


def test_the_window_read_sorts_nothing(tmp_path: Any) -> None:
    store = Store(f"sqlite:///{tmp_path / 'plan.db'}")
    store.migrate()
    _stored(store, [("fraud", "v1", "a", h * 3600, 0) for h in range(48)] + [("fraud", "v2", "b", 7200, 1)])
    seen: list[tuple[str, Any]] = []

    def spy(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        if "FROM buckets" in statement:
            seen.append((statement, parameters))

    event.listen(store.engine, "before_cursor_execute", spy)
    rows = store.buckets("fraud", 0, 86400, features=False)
    event.remove(store.engine, "before_cursor_execute", spy)
    assert [r.bucket_start for r in rows] == [h * 3600 for h in range(24)] + [7200]
    assert len(seen) == 1
    with store.read() as conn:
        plan = " | ".join(str(r[-1]) for r in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + seen[0][0], seen[0][1]))
    assert "TEMP B-TREE" not in plan and "SCAN buckets" not in plan, plan
    store.close()


def _vm_steps_of_bucket_range(store: Store, model: str | None) -> tuple[Any, int]:
    """store.bucket_range's answer and how many SQLite VM instructions its statement ran (a progress handler
    called every step, set on the connection that runs it)."""
    steps = [0]

    def count() -> int:
        steps[0] += 1
        return 0

    def watch(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        conn.connection.driver_connection.set_progress_handler(count if "FROM buckets" in statement else None, 1)

    event.listen(store.engine, "before_cursor_execute", watch)
    try:
        got = store.bucket_range(model)
    finally:
        event.remove(store.engine, "before_cursor_execute", watch)
    return got, steps[0]


def test_the_bucket_range_seeks_instead_of_reading_every_bucket(tmp_path: Any) -> None:
    """Every metrics query (and scrape) finds its window's end from the model's first and last bucket: min and max
    in one SELECT made SQLite read every index entry of the model, so the cost grew with the history kept."""
    store = Store(f"sqlite:///{tmp_path / 'range.db'}")
    store.migrate()
    _stored(store, [("fraud", "v1", "a", h * 3600, s) for h in range(10) for s in range(2)]
            + [("other", "v1", "a", -3600, 0), ("other", "v1", "a", 99 * 3600, 0)])
    small = _vm_steps_of_bucket_range(store, "fraud")
    _stored(store, [("fraud", "v1", "a", h * 3600, s) for h in range(1000) for s in range(6)]
            + [("other", "v1", "a", -3600, 0), ("other", "v1", "a", 99 * 3600, 0)])
    large = _vm_steps_of_bucket_range(store, "fraud")
    assert small[0] == (0, 9 * 3600) and large[0] == (0, 999 * 3600)
    assert store.bucket_range(None) == (-3600, 999 * 3600)
    assert store.bucket_range("nobody") is None
    assert large[1] == small[1], (small, large)  # two seeks whatever the history: the same VM steps
    store.close()
