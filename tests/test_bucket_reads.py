"""SQLite's read of a chunk's stored buckets by primary-key lookups (storage/bucket_writes._stored_buckets_sql)
returns the rows the whole-table `(key) IN (VALUES ...)` query it replaces returned, on dirty keys (empty, unicode, long
and NUL-holding names, extreme starts and shards, near misses in one column) and through merge_buckets."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine

from driftline.core.stats import BucketStats
from driftline.storage import bucket_writes, bulk
from driftline.storage.schema import metadata

TEXT = st.one_of(st.sampled_from(["", "m", "M", "m ", "é", "e\u0301", "x" * 200, "a\0b", "1"]), st.text(max_size=5))
INT = st.one_of(st.sampled_from([0, 1, -1, 3600, 2**62, -(2**62), 2**63 - 1]), st.integers(-10**12, 10**12))
KEYS = st.tuples(TEXT, TEXT, TEXT, INT, st.integers(-2**31, 2**31 - 1))
_K = "model, model_version, variant, bucket_start, shard"


def _frozen_read(conn: Any, keys: list[tuple[Any, ...]]) -> dict[tuple[Any, ...], bytes]:
    """bucket_writes._merge_chunk's SQLite read before the primary-key lookups (verbatim but for names)."""
    values = ", ".join(["(" + ", ".join(["?"] * 5) + ")"] * len(keys))
    rows = conn.exec_driver_sql(f"SELECT {_K}, data FROM buckets WHERE ({_K}) IN (VALUES {values})",
                                tuple(v for k in keys for v in k))
    return {tuple(r[:5]): r[5] for r in rows}


def _read(conn: Any, keys: list[tuple[Any, ...]]) -> dict[tuple[Any, ...], bytes]:
    rows = conn.exec_driver_sql(bucket_writes._stored_buckets_sql(len(keys)), tuple(v for k in keys for v in k))
    return {tuple(r[:5]): r[5] for r in rows}


def _near(key: tuple[Any, ...], i: int) -> tuple[Any, ...]:
    """The key with column i changed a little (a near miss)."""
    k = list(key)
    k[i] = k[i] + "x" if i < 3 else (k[i] - 1 if k[i] > 0 else k[i] + 1)  # stays within SQLite's 64-bit INTEGER
    return tuple(k)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(KEYS, unique=True, max_size=40), st.lists(KEYS, max_size=40), st.data())
def test_primary_key_reads_return_the_whole_table_reads_rows(stored: list[Any], asked: list[Any],
                                                              data: Any) -> None:
    eng = create_engine("sqlite://")
    metadata.create_all(eng)
    with eng.begin() as conn:
        if stored:
            conn.exec_driver_sql(f"INSERT INTO buckets ({_K}, data) VALUES (?, ?, ?, ?, ?, ?)",
                                 [(*k, repr(k).encode()) for k in stored])
        picks = [data.draw(st.sampled_from(stored)) for _ in range(data.draw(st.integers(0, len(stored))))] \
            if stored else []
        nears = [_near(k, data.draw(st.integers(0, 4))) for k in picks[:5]]
        keys = sorted(set(asked) | set(picks) | set(nears))
        for chunk in bulk.chunks(keys, 256):
            chunk = list(chunk)
            if chunk:
                assert _read(conn, chunk) == _frozen_read(conn, chunk)
    eng.dispose()


def test_merge_buckets_reads_and_adds_to_the_stored_rows() -> None:
    eng = create_engine("sqlite://")
    metadata.create_all(eng)
    d = BucketStats()
    d.conf[1, 1] = 2
    keys = [("m", "v", "A", 3600 * i, s) for i in range(300) for s in (0, 1)]
    with eng.begin() as conn:
        bucket_writes.merge_buckets(conn, "sqlite", {k: d for k in keys[::2]})
        bucket_writes.merge_buckets(conn, "sqlite", {k: d for k in keys})
        got = {tuple(r[:5]): BucketStats.from_bytes(r[5]).conf[1, 1]
               for r in conn.exec_driver_sql(f"SELECT {_K}, data FROM buckets")}
    eng.dispose()
    assert got == {k: 4 if i % 2 == 0 else 2 for i, k in enumerate(keys)}
