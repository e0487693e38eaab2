"""The hot path's blob reads on PostgreSQL fetch rows in binary format (storage/pgread.py): the same values as
SQLAlchemy's text-format read of the same statement, for any bytes; driver errors surface as SQLAlchemy's."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text
from sqlalchemy.exc import DataError, ProgrammingError

from driftline.storage import bucket_writes, bulk, pgread

_KEY = "model, model_version, variant, bucket_start, shard"
_READ = (f"SELECT {_KEY}, b.data FROM buckets b JOIN unnest(%b::text[], %b::text[], %b::text[], %b::int8[], "
         f"%b::int[]) AS k({_KEY}) USING ({_KEY}) ORDER BY {_KEY} FOR UPDATE OF b")

_rows = st.dictionaries(
    st.tuples(st.sampled_from(["fraud", "m\u00e9t\u00e9o", "x" * 200]), st.sampled_from(["v1", ""]),
              st.sampled_from(["A", "B"]), st.integers(-2**62, 2**62), st.integers(-2**31, 2**31 - 1)),
    st.binary(max_size=6000), min_size=1, max_size=40)


@pytest.fixture
def store(pg_store):
    return pg_store


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=_rows, absent=st.integers(0, 5))
def test_binary_read_equals_the_text_read(store, rows, absent) -> None:
    keys = sorted(rows) + [("absent", "v", "A", i, 0) for i in range(absent)]
    with store.write() as conn:
        conn.exec_driver_sql("DELETE FROM buckets")
        conn.execute(text(f"INSERT INTO buckets ({_KEY}, data) VALUES (:a, :b, :c, :d, :e, :f)"),
                     [dict(zip("abcdef", (*k, v))) for k, v in rows.items()])
        params = bulk._pg_columns(conn, bulk._columns(keys), bucket_writes._BUCKET_KINDS)
        old = [tuple(r) for r in conn.exec_driver_sql(_READ, params)]  # SQLAlchemy's cursor: text format
        new = pgread.fetch_binary(conn, _READ, params)
    assert new == old
    assert [type(v) for r in new for v in r] == [type(v) for r in old for v in r]
    assert {r[:5]: r[5] for r in new} == rows


def test_driver_errors_are_sqlalchemy_errors(store) -> None:
    with pytest.raises(ProgrammingError):
        with store.write() as conn:
            pgread.fetch_binary(conn, "SELECT no_such_column FROM buckets", ())
    with pytest.raises(DataError):
        with store.write() as conn:
            pgread.fetch_binary(conn, "SELECT 1 / %b::int", (0,))
    with store.write() as conn:  # the connection is usable afterwards
        assert pgread.fetch_binary(conn, "SELECT %b::int8", (7,)) == [(7,)]


_text = st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",))  # what PostgreSQL text holds
_floats = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([-0.0, 0.1, 1e-310, 5e-324])
_preds = st.lists(st.tuples(st.text(_text, min_size=1, max_size=12), st.sampled_from(["fraud", "\u00e9"]),
                            st.sampled_from(["A", "B"]), _floats, _floats, st.booleans(), st.integers(0, 2**31 - 1),
                            st.none() | st.integers(0, 1), st.none() | _floats, st.booleans(),
                            st.none() | st.dictionaries(st.text(_text, max_size=5), st.text(_text, max_size=5),
                                                        max_size=2)),
                  max_size=40, unique_by=lambda r: r[:3])
_outs = st.lists(st.tuples(st.text(_text, min_size=1, max_size=12), st.integers(0, 1), _floats, st.integers(0, 9),
                           st.booleans()), max_size=40, unique_by=lambda r: r[0])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(preds=_preds, outs=_outs, extra=st.lists(st.text(_text, min_size=1, max_size=12), max_size=10))
def test_binary_join_lookups_equal_the_text_reads(store, preds, outs, extra) -> None:
    """The join lookups (bulk.PG_PRED_LOOKUP, PG_OUT_LOOKUP) read in binary give what SQLAlchemy's text-format read
    gave, NaN, infinities, -0.0, subnormals, NULLs and non-ASCII ids included; load_join builds its view from them,
    each prediction with its label in force (its outcome row's when one is held: issue 18)."""
    from driftline.core.engine import OutcomeRecord, PredRecord, label_in_force

    records = [PredRecord(p, m, "v1", v, ts, sc, fl, sh, lb, lts, imp, sv)
               for p, m, v, ts, sc, fl, sh, lb, lts, imp, sv in preds]
    ids = sorted({r.prediction_id for r in records} | {o[0] for o in outs} | set(extra))
    with store.write() as conn:
        conn.exec_driver_sql("DELETE FROM predictions")
        conn.exec_driver_sql("DELETE FROM outcomes")
        bulk.write_predictions(conn, "postgresql", records)
        bulk.write_outcomes(conn, "postgresql", [OutcomeRecord(*o) for o in outs])
        params = bulk._pg_columns(conn, [ids], ("text",))
        for sql in (bulk.PG_PRED_LOOKUP, bulk.PG_OUT_LOOKUP):
            old = [tuple(r) for r in conn.exec_driver_sql(sql, params)]
            new = pgread.fetch_binary(conn, sql, params)
            assert repr(new) == repr(old)
            assert [type(v) for r in new for v in r] == [type(v) for r in old for v in r]
        view = bulk.load_join(conn, "postgresql", ids)
    by_id = {o[0]: OutcomeRecord(*o) for o in outs}
    for rec in records:
        label_in_force(rec, by_id.get(rec.prediction_id))
    assert repr(sorted((r for recs in view.preds.values() for r in recs), key=lambda r: r.key)) == \
        repr(sorted(records, key=lambda r: r.key))
    assert repr(sorted(view.outcomes.items())) == repr(sorted((o[0], OutcomeRecord(*o)) for o in outs))


def test_the_join_lookups_are_sent_in_one_pipeline(store, monkeypatch) -> None:
    """load_join's two lookups go in one round trip (pgread.fetch_binary_all: a psycopg pipeline), not one each."""
    import psycopg

    entered: list[int] = []
    real = psycopg.Connection.pipeline

    def counting(self):  # type: ignore[no-untyped-def]
        entered.append(1)
        return real(self)

    monkeypatch.setattr(psycopg.Connection, "pipeline", counting)
    monkeypatch.setattr(pgread, "fetch_binary", lambda *a: pytest.fail("a lookup sent alone"))
    from driftline.core.engine import OutcomeRecord, PredRecord

    with store.write() as conn:
        bulk.write_predictions(conn, "postgresql", [PredRecord("p1", "fraud", "v1", "A", 1.0, 0.5, True, 0)])
        bulk.write_outcomes(conn, "postgresql", [OutcomeRecord("p1", 1, 2.0, 0, True)])
    entered.clear()
    with store.write() as conn:
        view = bulk.load_join(conn, "postgresql", ["p1", "p2"])
    assert entered == [1]
    assert list(view.preds) == ["p1"] and list(view.outcomes) == ["p1"]


def test_pipelined_reads_raise_driver_errors_as_sqlalchemy_errors(store) -> None:
    with pytest.raises(ProgrammingError) as raised:
        with store.write() as conn:
            pgread.fetch_binary_all(conn, [("SELECT no_such_column FROM buckets", ()), ("SELECT 1", ())])
    # the failing statement is among those quoted (SRE tryout: the fence's error quoted the read sent after it)
    assert "no_such_column" in str(raised.value.statement)
    with pytest.raises(DataError):
        with store.write() as conn:
            pgread.fetch_binary_all(conn, [("SELECT 1", ()), ("SELECT 1 / %b::int", (0,))])
    with store.write() as conn:  # the connection is usable afterwards
        assert pgread.fetch_binary_all(conn, [("SELECT %b::int8", (7,)), ("SELECT %b::text", ("x",))]) == \
            [[(7,)], [("x",)]]


def test_an_error_surfacing_at_a_later_execute_quotes_every_statement(store, monkeypatch) -> None:
    """psycopg reads a pipeline's results as they arrive, so the first statement's server error can be raised by the
    second statement's execute (a loaded test run quoted only `SELECT 1`): every statement sent is quoted. Here the
    second execute raises the first one's error, as psycopg did."""
    import psycopg

    with pytest.raises(ProgrammingError) as raised:
        with store.write() as conn:
            dbapi = conn.connection.driver_connection
            real = dbapi.cursor

            class Late:
                def __init__(self, cur) -> None:
                    self.cur = cur

                def execute(self, sql, params):
                    if sql == "SELECT 1":
                        raise psycopg.errors.UndefinedColumn('column "no_such_column" does not exist')
                    return self.cur.execute(sql, params)

                def __getattr__(self, name):
                    return getattr(self.cur, name)

            monkeypatch.setattr(dbapi, "cursor", lambda *a, **k: Late(real(*a, **k)))
            pgread.fetch_binary_all(conn, [("SELECT no_such_column_yet FROM buckets", ()), ("SELECT 1", ())])
    assert "no_such_column_yet" in str(raised.value.statement) and "SELECT 1" in str(raised.value.statement)
