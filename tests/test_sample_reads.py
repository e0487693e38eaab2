"""SQLite's read of stored feature samples by primary-key lookups (storage/samples._stored) returns the rows the
whole-table `(key) IN (VALUES ...)` query it replaces returned, on dirty keys; and neither that read nor the
buckets' ones (their blobs, their feature histograms) scan their table (the scan's cost grew with the history kept)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine

from driftline.storage import bucket_writes, samples
from driftline.storage.store import Store

TEXT = st.one_of(st.sampled_from(["", "m", "M", "m ", "é", "e\u0301", "x" * 200, "a\0b", "1"]), st.text(max_size=5))
INT = st.one_of(st.sampled_from([0, 1, -1, 3600, 2**62, -(2**62), 2**63 - 1]), st.integers(-10**12, 10**12))
KEYS = st.tuples(TEXT, TEXT, TEXT, INT)
_K = "model, model_version, variant, bucket_start"


def _frozen_read(conn: Any, keys: list[tuple[Any, ...]]) -> dict[tuple[Any, ...], bytes]:
    """samples._stored's SQLite read before the primary-key lookups (verbatim but for names)."""
    values = ", ".join(["(?, ?, ?, ?)"] * len(keys))
    rows = conn.exec_driver_sql(f"SELECT {_K}, data FROM feature_samples WHERE ({_K}) IN (VALUES {values})",
                                tuple(v for key in keys for v in key))
    return {(r[0], r[1], r[2], int(r[3])): bytes(r[4]) for r in rows}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(KEYS, unique=True, max_size=40), st.lists(KEYS, max_size=40), st.data())
def test_primary_key_reads_return_the_whole_table_reads_rows(stored: list[Any], asked: list[Any],
                                                              data: Any) -> None:
    eng = create_engine("sqlite://")
    samples.metadata.create_all(eng)
    with eng.begin() as conn:
        if stored:
            conn.exec_driver_sql(f"INSERT INTO feature_samples ({_K}, span, data) VALUES (?, ?, ?, ?, ?, ?)",
                                 [(*k, 3600, repr(k).encode()) for k in stored])
        picks = [data.draw(st.sampled_from(stored)) for _ in range(data.draw(st.integers(0, len(stored))))] \
            if stored else []
        near = [(k[0] + "x", *k[1:]) for k in picks[:3]] + [(*k[:3], k[3] - 1 if k[3] > 0 else k[3] + 1) for k in picks[:3]]
        keys = sorted(set(asked) | set(picks) | set(near))
        if keys:
            assert samples._stored(conn, "sqlite", keys) == _frozen_read(conn, keys)
    eng.dispose()


def _plan(conn: Any, sql: str, n: int, width: int) -> str:
    rows = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql, tuple([0] * (n * width)))
    return " | ".join(str(r[-1]) for r in rows)


def test_neither_read_scans_its_table(tmp_path: Any) -> None:
    store = Store(f"sqlite:///{tmp_path / 'plan.db'}")
    store.migrate()  # the schema as migrations build it
    with store.write() as conn:
        seen: list[str] = []
        real = conn.exec_driver_sql

        def spy(sql: str, *args: Any) -> Any:
            seen.append(sql)
            return real(sql, *args)

        conn.exec_driver_sql = spy  # type: ignore[method-assign]
        samples._stored(conn, "sqlite", [("m", "v", "a", 0), ("m", "v", "b", 3600)])
        conn.exec_driver_sql = real  # type: ignore[method-assign]
        sample_plan = _plan(conn, seen[-1], 2, 4)
        bucket_plan = _plan(conn, bucket_writes._stored_buckets_sql(3), 3, 5)
        feature_plan = _plan(conn, bucket_writes._stored_features_sql(3), 3, 5)
    assert "SCAN feature_samples" not in sample_plan and "SEARCH" in sample_plan, sample_plan
    assert "SCAN buckets" not in bucket_plan and "SEARCH" in bucket_plan, bucket_plan
    assert "SCAN bucket_features" not in feature_plan and "SEARCH" in feature_plan, feature_plan
    store.close()
