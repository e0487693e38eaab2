"""SQLite join-row writes put a column that holds NULL, one text or one small int in every row of a batch into the
statement as a literal instead of binding it on every row (storage/sqlite_rows.literal_columns, issue 18), and
store exactly what binding every value stored (the route before, kept below verbatim): every value and its storage
class, on hostile rows (columns constant by equality but not by type, 1 / 1.0 / True, 0 / 0.0 / -0.0 / False, NaN,
NULL as None and as the NaN bound for it, huge ints, texts with NUL, quotes, non-ASCII)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Connection, create_engine, event

from driftline.core.engine import OutcomeRecord, PredRecord
from driftline.storage import bulk, sqlite_rows
from driftline.storage.sqlite_binding import NULL, register_adapters


def _base_insert_many(conn: Connection, head: str, width: int, tail: str, flat: list[Any],
                      ints: tuple[int, ...] = ()) -> None:
    """sqlite_rows.insert_many before literal columns (verbatim but for the unused `ints`)."""
    one = "(" + ", ".join(["?"] * width) + ")"
    n = len(flat) // width
    whole = (n - n % sqlite_rows.ROWS_PER_INSERT) * width
    if whole:
        step = sqlite_rows.ROWS_PER_INSERT * width
        conn.exec_driver_sql(head + ", ".join([one] * sqlite_rows.ROWS_PER_INSERT) + " " + tail,
                             [tuple(flat[i:i + step]) for i in range(0, whole, step)])
    if whole < len(flat):
        conn.exec_driver_sql(f"{head}{one} {tail}",
                             [tuple(flat[i:i + width]) for i in range(whole, len(flat), width)])



_TEXT = st.one_of(st.sampled_from(["fraud", "A", "v1", "", "é", "a\x00b", "'", '"', "\\", "1", "1.0", "?", ":a",
                                   "x'); DROP TABLE predictions; --", "tab\t", "NULL", "😀"]),
                  st.text(max_size=4))
_NUM = st.one_of(st.sampled_from([0, 1, 0.0, -0.0, 1.0, True, False, 5e-324, -2**63, 2**63 - 1, 2**31, -2**31]),
                 st.integers(-2**15, 2**15), st.floats(allow_nan=False))
_OPT = st.one_of(st.none(), _NUM, st.just(math.nan), st.just(NULL))


def _column(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A column's values: one value for every row (drawn once), or a few values (equal ones of other types among
    them), or free."""
    return st.one_of(values.map(lambda v: ("one", [v])), st.lists(values, min_size=1, max_size=3).map(
        lambda vs: ("few", vs)), st.just(("free", values)))


@st.composite
def _rows(draw: Any, kinds: tuple[st.SearchStrategy[Any], ...], n: int) -> list[list[Any]]:
    cols = [draw(_column(k)) for k in kinds]
    out = []
    for _ in range(n):
        out.append([vs[0] if how == "one" else draw(st.sampled_from(vs)) if how == "few" else draw(vs)
                    for how, vs in cols])
    return out


_PRED_KINDS = (_TEXT, _TEXT, _TEXT, _NUM, _NUM, _NUM, _NUM, _OPT, _OPT, _NUM,
               st.one_of(st.none(), st.dictionaries(_TEXT, _TEXT, max_size=2)))
_OUT_KINDS = (_NUM, _NUM, _NUM, _NUM)


@st.composite
def _batch(draw: Any) -> tuple[list[PredRecord], list[OutcomeRecord]]:
    n = draw(st.integers(0, 200))
    ids = draw(st.lists(st.text(max_size=5), min_size=n, max_size=n, unique=True))
    preds = [PredRecord(p, m, mv, v, ts, sc, fl, sh, lb, lts, imp, sv)
             for p, (m, v, mv, ts, sc, fl, sh, lb, lts, imp, sv) in zip(ids, draw(_rows(_PRED_KINDS, n)))]
    outs = [OutcomeRecord(p, lb, ts, sh, m) for p, (lb, ts, sh, m) in zip(ids[::2], draw(_rows(_OUT_KINDS, n)))]
    return preds, outs


def _stored(join_schema: list[str], batches: list[tuple[list[PredRecord], list[OutcomeRecord]]], base: bool
            ) -> list[list[tuple[Any, ...]]]:
    """Both join tables (every column and its storage class) after writing `batches` by either route: predictions
    upserted, outcomes by FRESH_INSERT for ids not yet stored and upserted for the others."""
    with pytest.MonkeyPatch.context() as m:
        if base:
            m.setattr(sqlite_rows, "insert_many", _base_insert_many)
        eng = create_engine("sqlite://")
        register_adapters()
        with eng.begin() as conn:
            for sql in join_schema:
                conn.exec_driver_sql(sql)
            seen: set[str] = set()
            for preds, outs in batches:
                bulk.write_predictions(conn, "sqlite", preds)
                bulk.write_outcomes(conn, "sqlite", outs, frozenset(o.prediction_id for o in outs) & seen)
                seen.update(o.prediction_id for o in outs)
            tables = []
            for table, cols in (("predictions", bulk.PRED_COLS), ("outcomes", bulk._OUT_COLS)):
                names = cols.split(", ")
                tables.append([tuple(r) for r in conn.exec_driver_sql(
                    f"SELECT {cols}, {', '.join(f'typeof({c})' for c in names)} FROM {table} ORDER BY {cols}")])
        eng.dispose()
    return tables


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_batch(), min_size=1, max_size=3))
def test_literal_columns_store_what_binding_every_value_stored(join_schema: list[str], batches: Any) -> None:
    assert _stored(join_schema, batches, base=False) == _stored(join_schema, batches, base=True)


@pytest.mark.parametrize("n", [2, 79, 80, 81, 3 * 80 + 7])
def test_constant_columns_are_literals(join_schema: list[str], n: int) -> None:
    """A replay batch's predictions of one model, variant and version, shard 0, not implicit, without slice values
    bind 6 values a row (those 6 are literals); its outcome rows of shard 0 bind 4 of 5. Before, all 12 and 5."""
    preds = [PredRecord(f"p{i:04d}", "fraud", "v2", "B", 1.7e9 + i, i / 1000, i % 3 == 0, 0, None if i % 2 else 1,
                        None if i % 2 else 1.8e9, False) for i in range(n)]
    outs = [OutcomeRecord(f"p{i:04d}", i % 2, 1.8e9 + i, 0, i % 5 > 0) for i in range(n)]
    eng = create_engine("sqlite://")
    register_adapters()
    bound: dict[str, list[int]] = {"predictions": [], "outcomes": []}

    @event.listens_for(eng, "before_cursor_execute")
    def count(conn: Any, cursor: Any, statement: str, params: Any, context: Any, many: bool) -> None:
        for table, got in bound.items():
            if f"INTO {table} " in statement:
                got.extend(len(p) for p in (params if many else [params]))

    with eng.begin() as conn:
        for sql in join_schema:
            conn.exec_driver_sql(sql)
        bulk.write_predictions(conn, "sqlite", preds)
        bulk.write_outcomes(conn, "sqlite", outs, frozenset())
        assert conn.exec_driver_sql("SELECT count(*), sum(shard), sum(implicit), count(slice_values), min(model), "
                                    "max(model), min(variant), max(model_version) FROM predictions"
                                    ).one() == (n, 0, 0, 0, "fraud", "fraud", "B", "v2")
        assert conn.exec_driver_sql("SELECT count(*), sum(shard) FROM outcomes").one() == (n, 0)
    eng.dispose()
    assert sum(bound["predictions"]) == 6 * n
    assert sum(bound["outcomes"]) == 4 * n
