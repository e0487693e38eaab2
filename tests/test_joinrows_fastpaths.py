"""The SQLite join-store fast paths (storage/bulk.py: booleans bound as ints and NULLs as NaN over flat value
lists, lookups in one json_each statement or, for ids JSON would escape, padded VALUES lists of LOOKUP_IDS, rows
unpacked into records) store and load exactly what the routes
they replace did, on dirty input: the old routes are kept below verbatim and both run, batch after batch, on the
real schema (migrated once); tables are compared with every value's storage class, lookups record by record and in
order."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from itertools import chain
from operator import attrgetter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Connection, create_engine

from driftline.core.engine import JoinView, OutcomeRecord, PredRecord
from driftline.storage import bulk, sqlite_lookup, sqlite_rows
from driftline.storage.sqlite_binding import NULL, register_adapters

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --- the routes replaced (verbatim from storage/bulk.py before fast-joinrows) ----------------------------------
_CHUNK = 500
_ROWS_PER_INSERT = 80
_OLD_PRED_FIELDS = attrgetter("prediction_id", "model", "variant", "model_version", "ts", "score", "flagged",
                              "shard", "label", "label_ts", "implicit", "slice_values")
_OLD_OUT_FIELDS = attrgetter("prediction_id", "label", "ts", "shard", "matched")


def _old_chunks(items: Sequence[Any], size: int = _CHUNK) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def _old_marks(n: int) -> str:
    return ", ".join(["?"] * n)


def _old_load_join(conn: Connection, ids: Sequence[str]) -> JoinView:
    """load_join's SQLite route before (verbatim but for the PostgreSQL branch)."""
    view = JoinView()
    idl = sorted(set(ids))
    if not idl:
        return view
    queries = [(f"SELECT {bulk.PRED_COLS} FROM predictions WHERE prediction_id IN ({_old_marks(len(chunk))})",
                f"SELECT {bulk._OUT_COLS} FROM outcomes WHERE prediction_id IN ({_old_marks(len(chunk))})",
                tuple(chunk)) for chunk in _old_chunks(idl)]
    preds, outcomes = view.preds, view.outcomes
    for pred_sql, out_sql, params in queries:
        for r in conn.exec_driver_sql(pred_sql, params).fetchall():
            rec = PredRecord(r[0], r[1], r[3], r[2], r[4], r[5], bool(r[6]), r[7], r[8], r[9], bool(r[10]),
                             None if r[11] is None else json.loads(r[11]))
            if (recs := preds.get(r[0])) is None:
                preds[r[0]] = [rec]
            else:
                recs.append(rec)
        for r in conn.exec_driver_sql(out_sql, params).fetchall():
            outcomes[r[0]] = OutcomeRecord(r[0], r[1], r[2], r[3], bool(r[4]))
    return view


def _old_pred_rows(records: Sequence[PredRecord]) -> list[tuple[Any, ...]]:
    return [row if row[11] is None else (*row[:11], json.dumps(row[11])) for row in map(_OLD_PRED_FIELDS, records)]


def _old_insert_many(conn: Connection, head: str, width: int, tail: str, rows: list[tuple[Any, ...]]) -> None:
    rows.sort()
    one = f"({_old_marks(width)})"
    whole = len(rows) - len(rows) % _ROWS_PER_INSERT
    if whole:
        flat = list(chain.from_iterable(rows[:whole]))
        step = _ROWS_PER_INSERT * width
        conn.exec_driver_sql(head + ", ".join([one] * _ROWS_PER_INSERT) + " " + tail,
                             [tuple(flat[i:i + step]) for i in range(0, len(flat), step)])
    if whole < len(rows):
        conn.exec_driver_sql(f"{head}{one} {tail}", rows[whole:])


def _old_write_predictions(conn: Connection, records: Sequence[PredRecord]) -> None:
    if not records:
        return
    _old_insert_many(conn, f"INSERT INTO predictions ({bulk.PRED_COLS}) VALUES ", 12, bulk._PRED_CONFLICT,
                     _old_pred_rows(records))


def _old_write_outcomes(conn: Connection, outcomes: Sequence[OutcomeRecord]) -> None:
    if not outcomes:
        return
    _old_insert_many(conn, f"INSERT INTO outcomes ({bulk._OUT_COLS}) VALUES ", 5, bulk._OUT_CONFLICT,
                     list(map(_OLD_OUT_FIELDS, outcomes)))


# --- the comparison ---------------------------------------------------------------------------------------------

PIDS = st.one_of(st.sampled_from(["p1", "p2", "p10", "é", "x" * 200, "", "a\x00b", "%", "'"]), st.text(max_size=6))
FLOATS = st.one_of(st.floats(allow_nan=False), st.sampled_from([-0.0, 5e-324, 1e308, math.inf, -math.inf]))
OPT_FLOATS = st.one_of(st.none(), FLOATS, st.just(math.nan))
LABELS = st.one_of(st.none(), st.integers(0, 1), st.integers(-2**15, 2**15 - 1), st.just(True))
SLICES = st.one_of(st.none(), st.dictionaries(st.sampled_from(["country", "é", ""]), st.text(max_size=4), max_size=3))
preds = st.builds(PredRecord, PIDS, st.sampled_from(["m", "n"]), st.sampled_from(["v1", "v2", ""]),
                  st.sampled_from(["A", "B"]), FLOATS, FLOATS, st.booleans(), st.integers(-2**63, 2**63 - 1),
                  LABELS, OPT_FLOATS, st.booleans(), SLICES)
outcomes = st.builds(OutcomeRecord, PIDS, st.integers(-2**15, 2**15 - 1), FLOATS, st.integers(-2**31, 2**31 - 1),
                     st.booleans())
batches = st.lists(st.tuples(st.lists(preds, max_size=250), st.lists(outcomes, max_size=250),
                             st.lists(PIDS, max_size=40)), min_size=1, max_size=3)


def _tables(conn: Connection) -> list[list[tuple[Any, ...]]]:
    """Both join tables with every value's storage class, in key order."""
    return [[tuple(r) for r in conn.exec_driver_sql(
        f"SELECT *, {', '.join(f'typeof({c})' for c in cols.split(', '))} FROM {t} ORDER BY {key}")]
        for t, cols, key in (("predictions", bulk.PRED_COLS, "prediction_id, model, variant"),
                             ("outcomes", bulk._OUT_COLS, "prediction_id"))]


def _as_read(view: JoinView) -> list[Any]:
    """A view as comparable values: ids in order, records in order, NaN made comparable."""
    def fix(v: Any) -> Any:
        return ("nan",) if isinstance(v, float) and math.isnan(v) else (type(v).__name__, v)
    return [[(k, [[fix(getattr(r, f)) for f in r.__slots__] for r in recs]) for k, recs in view.preds.items()],
            [(k, [fix(getattr(o, f)) for f in o.__slots__]) for k, o in view.outcomes.items()]]


def _in_force(view: JoinView) -> JoinView:
    """The old route's view with each prediction's label in force (issue 18: an outcome row held for its id gives
    its label, ts and not implicit), as the lookup now returns it."""
    for pid, out in view.outcomes.items():
        for rec in view.preds.get(pid, []):
            rec.label, rec.label_ts, rec.implicit = out.label, out.ts, False
    return view


def _run(join_schema: list[str], steps: list[tuple[list[PredRecord], list[OutcomeRecord], list[str]]], fast: bool
         ) -> tuple[list[Any], list[Any]]:
    """Write and look up each batch in turn (new or old routes): the tables and every lookup's view."""
    eng = create_engine("sqlite://")
    register_adapters()
    views = []
    with eng.begin() as conn:
        for sql in join_schema:
            conn.exec_driver_sql(sql)
        for recs, outs, extra in steps:
            ids = [r.prediction_id for r in recs] + [o.prediction_id for o in outs] + extra
            view = bulk.load_join(conn, "sqlite", ids) if fast else _in_force(_old_load_join(conn, ids))
            views.append(_as_read(view))
            upserts = list({r.key: r for r in recs}.values())  # one record per key, as EngineResult.upserts
            outs = list({o.prediction_id: o for o in outs}.values())
            if fast:
                bulk.write_predictions(conn, "sqlite", upserts)
                bulk.write_outcomes(conn, "sqlite", outs)
            else:
                _old_write_predictions(conn, upserts)
                _old_write_outcomes(conn, outs)
        ids = sorted({r.prediction_id for recs, _, _ in steps for r in recs})
        views.append(_as_read(bulk.load_join(conn, "sqlite", ids) if fast else _in_force(_old_load_join(conn, ids))))
        tables = _tables(conn)
    eng.dispose()
    return tables, views


@SETTINGS
@given(batches)
def test_join_rows_store_and_load_as_the_old_routes(join_schema: list[str], steps: Any) -> None:
    assert _run(join_schema, steps, fast=True) == _run(join_schema, steps, fast=False)


@pytest.mark.parametrize("n", [0, 1, 15, 16, 17, sqlite_rows.ROWS_PER_INSERT, sqlite_lookup.LOOKUP_IDS - 1,
                               sqlite_lookup.LOOKUP_IDS, sqlite_lookup.LOOKUP_IDS + 1, 2 * sqlite_lookup.LOOKUP_IDS + 100])
def test_sizes_at_the_chunk_and_group_boundaries(join_schema: list[str], n: int) -> None:
    recs = [PredRecord(f"p{i:05d}", "m", "v", "A" if i % 7 else "B", float(i), 0.5, i % 2 == 0, i % 3,
                       None if i % 4 else 1, None if i % 4 else 2.5, i % 5 == 0, None if i % 6 else {"c": str(i)})
            for i in range(n)]
    outs = [OutcomeRecord(f"p{i:05d}", i % 2, float(i), i % 3, i % 3 == 0) for i in range(0, n, 2)]
    steps = [(recs, outs, ["zz"]), (recs[::3], outs[::5], [])]
    assert _run(join_schema, steps, fast=True) == _run(join_schema, steps, fast=False)


def test_lookup_chunks_pad_with_the_last_id_to_a_few_sizes() -> None:
    for n in (1, 16, 17, 300, sqlite_lookup.LOOKUP_IDS, sqlite_lookup.LOOKUP_IDS + 1, 3 * sqlite_lookup.LOOKUP_IDS + 5):
        idl = [f"p{i:05d}" for i in range(n)]
        chunks = list(sqlite_lookup.lookup_chunks(idl))
        assert [i for c in chunks for i in dict.fromkeys(c)] == idl
        assert all(len(c) in sqlite_lookup.LOOKUP_SIZES and set(c[len(set(c)):]) <= {c[-1]} for c in chunks)


def test_null_binds_as_sqlite_null() -> None:
    import sqlite3

    db = sqlite3.connect(":memory:")
    assert db.execute("SELECT ? IS NULL, typeof(?)", (NULL, NULL)).fetchone() == (1, "null")
    db.close()
