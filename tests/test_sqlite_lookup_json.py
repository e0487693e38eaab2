"""A batch's SQLite join lookup is one json_each statement (issue 18, lookups round), by primary key in both tables,
and gives exactly what the chunked VALUES route (kept for ids JSON would escape) and a plain read by key give, for
dirty ids: quotes, backslashes, control characters, NUL, non-ASCII, numeric-looking, empty, repeated."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import event

from driftline.core.engine import OutcomeRecord, PredRecord
from driftline.storage import bulk, sqlite_lookup
from driftline.storage.store import Store
from sqlite_fixtures import migrated_copy

pytestmark = pytest.mark.skipif(not sqlite_lookup.HAS_JSON_EACH, reason="this SQLite has no json_each")

IDS = st.one_of(st.sampled_from(["p1", "p10", "p2", "", "1", "01", "1.0", "é", "日本", "😀", 'a"b', "a\\b", "a\x00b",
                                 "a\nb", "\x7f", "\u2028", " ", "x" * 200, "[", "]", ","]),
                st.text(max_size=5))
NAMES = st.one_of(st.sampled_from(["", "v1", 'q"', "b\\", "\x00", "é", "😀", "1", "null", "[1]"]), st.text(max_size=4))
INTS = st.one_of(st.integers(-2**63, 2**63 - 1), st.sampled_from([0, 1, -1, 2**53 + 1]))
LABELS = st.one_of(st.none(), st.integers(-2**15, 2**15 - 1))
FLOATS = st.one_of(st.floats(allow_nan=False), st.sampled_from([-0.0, 5e-324, 0.1, 1e308, math.inf, -math.inf]))
OPT_FLOATS = st.one_of(st.none(), FLOATS)
SLICES = st.one_of(st.none(), st.dictionaries(NAMES, NAMES, max_size=3))


def _store(tmp_path: Any, name: str) -> Store:
    store = Store(f"sqlite:///{tmp_path / name}")
    store.migrate()
    return store


def _fields(r: Any) -> tuple[Any, ...]:
    """A record's values with their types (1 == 1.0 == True), NaN comparable."""
    return tuple((type(v).__name__, "nan" if v != v else v) for v in (getattr(r, f) for f in r.__struct_fields__))


def _rows(view: Any) -> list[Any]:
    return [[(k, [_fields(r) for r in recs]) for k, recs in view.preds.items()],
            [(k, _fields(o)) for k, o in view.outcomes.items()]]


def test_a_batch_of_plain_ids_is_looked_up_in_one_statement(tmp_path: Any) -> None:
    """3,000 ids: one statement (the chunked route ran ceil(3000 / 512) = 6) of 4 columns a row, by primary key in
    both tables."""
    store = _store(tmp_path, "one.db")
    preds = [PredRecord(f"tx-{i}", "m", "v1", "A", float(i), 0.5, False) for i in range(0, 3000, 2)]
    with store.write() as conn:
        bulk.write_predictions(conn, "sqlite", preds)
        bulk.write_outcomes(conn, "sqlite", [OutcomeRecord(f"tx-{i}", 1, 1.0) for i in range(0, 3000, 3)])
    seen: list[tuple[str, int]] = []
    event.listen(store.engine, "after_cursor_execute",
                 lambda _c, cur, sql, *_: seen.append((sql, len(cur.description or ()))))
    with store.write() as conn:
        seen.clear()
        view = bulk.load_join(conn, "sqlite", [f"tx-{i}" for i in range(3000)] * 2)
        lookups = [s for s in seen if "predictions" in s[0]]
        plan = [r[3] for r in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sqlite_lookup.JSON_LOOKUP, ("[]",))]
    # one statement, whose rows are 4 columns (3 floats and the rest as one JSON array) instead of 12
    assert lookups == [(sqlite_lookup.JSON_LOOKUP, 4)]
    assert len(view.preds) == 1500 and len(view.outcomes) == 1000
    assert "SEARCH p USING PRIMARY KEY (prediction_id=?)" in plan
    assert "SEARCH o USING PRIMARY KEY (prediction_id=?)" in plan
    assert not any(p.startswith("SCAN") and p[5:6] in "po" for p in plan), plan  # json_each outside, no table scan
    store.close()


def test_no_ids_run_no_statement(tmp_path: Any) -> None:
    store = _store(tmp_path, "none.db")
    seen: list[str] = []
    event.listen(store.engine, "before_cursor_execute", lambda *a: seen.append(a[2]))
    with store.write() as conn:
        seen.clear()
        view = bulk.load_join(conn, "sqlite", iter(()))
        assert not [s for s in seen if "predictions" in s]
    assert not view.preds and not view.outcomes
    store.close()


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(stored=st.lists(st.tuples(IDS, st.sampled_from([("m", "A"), ("m", "B"), ("n", "A")]), st.booleans()),
                       max_size=40),
       outs=st.lists(IDS, max_size=20), asked=st.lists(IDS, max_size=60), plain=st.booleans(),
       values=st.lists(st.tuples(NAMES, INTS, LABELS, FLOATS, OPT_FLOATS, SLICES), min_size=1, max_size=8))
def test_json_route_equals_the_chunked_route_on_dirty_ids(tmp_path_factory: Any, monkeypatch: pytest.MonkeyPatch,
                                                          migrated_sqlite: Any, stored: Any, outs: Any, asked: Any, plain: bool,
                                                          values: Any) -> None:
    """Both routes (and the route taken for the ids as drawn) give the same records, values and types in the same
    order; `plain` drops the ids JSON would escape so that the json_each route (values packed as JSON) runs too."""
    if plain:
        def ok(i: str) -> bool:
            return i.isprintable() and '"' not in i and "\\" not in i
        stored, outs, asked = [s for s in stored if ok(s[0])], [o for o in outs if ok(o)], [a for a in asked if ok(a)]
    store = migrated_copy(migrated_sqlite, tmp_path_factory.mktemp("dirty") / "d.db")
    def value(n: int) -> Any:
        return values[n % len(values)]
    preds = list({(i, m, v): PredRecord(i, m + value(n)[0], value(n + 1)[0], v + value(n + 2)[0], value(n)[3],
                                        value(n + 1)[3], f, value(n)[1], value(n)[2], value(n)[4], not f,
                                        value(n)[5])
                  for n, (i, (m, v), f) in enumerate(stored)}.values())
    with store.write() as conn:
        bulk.write_predictions(conn, "sqlite", preds)
        bulk.write_outcomes(conn, "sqlite", list({o: OutcomeRecord(o, value(n)[2] or 0, value(n)[3], value(n)[1],
                                                                   n % 2 == 0)
                                                  for n, o in enumerate(outs)}.values()))
    ids = asked + [p.prediction_id for p in preds[::2]] + outs[::3]
    with store.read() as conn:
        taken = _rows(bulk.load_join(conn, "sqlite", ids))
        monkeypatch.setattr(sqlite_lookup, "HAS_JSON_EACH", False)
        chunked = _rows(bulk.load_join(conn, "sqlite", ids))
        monkeypatch.undo()
        if plain:
            seen: list[str] = []
            event.listen(store.engine, "before_cursor_execute", lambda *a: seen.append(a[2]))
            assert _rows(bulk.load_join(conn, "sqlite", ids)) == taken
            assert not ids or seen == [sqlite_lookup.JSON_LOOKUP]  # these ids take the json_each route
    assert taken == chunked
    store.close()
