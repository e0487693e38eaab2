"""A batch's SQLite join lookup is one json_each statement (issue 18, lookups round), by primary key in both tables,
and gives exactly what the chunked VALUES route (kept for ids JSON would escape) and a plain read by key give, for
dirty ids: quotes, backslashes, control characters, NUL, non-ASCII, numeric-looking, empty, repeated."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import event

from driftline.core.engine import OutcomeRecord, PredRecord
from driftline.storage import bulk, sqlite_lookup
from driftline.storage.store import Store

pytestmark = pytest.mark.skipif(not sqlite_lookup.HAS_JSON_EACH, reason="this SQLite has no json_each")

IDS = st.one_of(st.sampled_from(["p1", "p10", "p2", "", "1", "01", "1.0", "é", "日本", "😀", 'a"b', "a\\b", "a\x00b",
                                 "a\nb", "\x7f", "\u2028", " ", "x" * 200, "[", "]", ","]),
                st.text(max_size=5))


def _store(tmp_path: Any, name: str) -> Store:
    store = Store(f"sqlite:///{tmp_path / name}")
    store.migrate()
    return store


def _rows(view: Any) -> list[Any]:
    return [[(k, [tuple(getattr(r, f) for f in r.__struct_fields__) for r in recs]) for k, recs in view.preds.items()],
            [(k, tuple(getattr(o, f) for f in o.__struct_fields__)) for k, o in view.outcomes.items()]]


def test_a_batch_of_plain_ids_is_looked_up_in_one_statement(tmp_path: Any) -> None:
    """3,000 ids: one statement (the chunked route ran ceil(3000 / 512) = 6), by primary key in both tables."""
    store = _store(tmp_path, "one.db")
    preds = [PredRecord(f"tx-{i}", "m", "v1", "A", float(i), 0.5, False) for i in range(0, 3000, 2)]
    with store.write() as conn:
        bulk.write_predictions(conn, "sqlite", preds)
        bulk.write_outcomes(conn, "sqlite", [OutcomeRecord(f"tx-{i}", 1, 1.0) for i in range(0, 3000, 3)])
    seen: list[str] = []
    event.listen(store.engine, "before_cursor_execute", lambda *a: seen.append(a[2]))
    with store.write() as conn:
        seen.clear()
        view = bulk.load_join(conn, "sqlite", [f"tx-{i}" for i in range(3000)] * 2)
        lookups = [s for s in seen if "predictions" in s]
        plan = [r[3] for r in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sqlite_lookup.JSON_LOOKUP, ("[]",))]
    assert lookups == [sqlite_lookup.JSON_LOOKUP]
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
       outs=st.lists(IDS, max_size=20), asked=st.lists(IDS, max_size=60), plain=st.booleans())
def test_json_route_equals_the_chunked_route_on_dirty_ids(tmp_path_factory: Any, monkeypatch: pytest.MonkeyPatch,
                                                          stored: Any, outs: Any, asked: Any, plain: bool) -> None:
    """Both routes (and the route taken for the ids as drawn) give the same records in the same order; `plain`
    drops the ids JSON would escape so that the json_each route runs too."""
    if plain:
        def ok(i: str) -> bool:
            return i.isprintable() and '"' not in i and "\\" not in i
        stored, outs, asked = [s for s in stored if ok(s[0])], [o for o in outs if ok(o)], [a for a in asked if ok(a)]
    store = _store(tmp_path_factory.mktemp("dirty"), "d.db")
    preds = list({(i, m, v): PredRecord(i, m, "v1", v, float(n), 0.25, f, n % 3, None if n % 2 else 1,
                                        None if n % 2 else 2.5, f, None if n % 4 else {"c": i})
                  for n, (i, (m, v), f) in enumerate(stored)}.values())
    with store.write() as conn:
        bulk.write_predictions(conn, "sqlite", preds)
        bulk.write_outcomes(conn, "sqlite", list({o: OutcomeRecord(o, n % 2, float(n), n % 5, n % 2 == 0)
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
