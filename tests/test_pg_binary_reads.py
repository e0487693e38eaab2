"""The hot path's blob reads on PostgreSQL fetch rows in binary format (storage/pgread.py): the same values as
SQLAlchemy's text-format read of the same statement, for any bytes; driver errors surface as SQLAlchemy's."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text
from sqlalchemy.exc import DataError, ProgrammingError

from driftline.storage import bulk, pgread
from driftline.storage.store import Store

_KEY = "model, model_version, variant, bucket_start, shard"
_READ = (f"SELECT {_KEY}, b.data FROM buckets b JOIN unnest(%b::text[], %b::text[], %b::text[], %b::int8[], "
         f"%b::int[]) AS k({_KEY}) USING ({_KEY}) ORDER BY {_KEY} FOR UPDATE OF b")

_rows = st.dictionaries(
    st.tuples(st.sampled_from(["fraud", "m\u00e9t\u00e9o", "x" * 200]), st.sampled_from(["v1", ""]),
              st.sampled_from(["A", "B"]), st.integers(-2**62, 2**62), st.integers(-2**31, 2**31 - 1)),
    st.binary(max_size=6000), min_size=1, max_size=40)


@pytest.fixture
def store(pg_url):
    s = Store(pg_url)
    s.migrate()
    yield s
    s.close()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=_rows, absent=st.integers(0, 5))
def test_binary_read_equals_the_text_read(store, rows, absent) -> None:
    keys = sorted(rows) + [("absent", "v", "A", i, 0) for i in range(absent)]
    with store.write() as conn:
        conn.exec_driver_sql("DELETE FROM buckets")
        conn.execute(text(f"INSERT INTO buckets ({_KEY}, data) VALUES (:a, :b, :c, :d, :e, :f)"),
                     [dict(zip("abcdef", (*k, v))) for k, v in rows.items()])
        params = bulk._pg_columns(conn, bulk._columns(keys), bulk._BUCKET_KINDS)
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
