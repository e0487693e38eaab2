"""A batch's bucket read-modify-write (the ingestion hot path, with bulk's conventions): each delta added to its
stored bucket in `buckets`, and, for the deltas that have feature histograms (new predictions), those added to the
bucket's row in `bucket_features` (0013_featapart). A batch's label moves touch ~99.5 % of the buckets it writes
and no feature histogram: their feature rows are neither read nor written, and the `buckets` blob, which always
holds "f": {}, no longer carries them through every read, decode, encode and write.

PostgreSQL: the feature read goes in the pipeline of the bucket read (no round trip more), and the feature upsert
in the statement of the bucket upsert (a data-modifying WITH), so a batch with new predictions sends one statement
more than before (the feature read) in as many round trips, and a batch without sends the same statements as before.
SQLite: both reads are primary-key lookups (_stored_sql), the feature read only of the buckets found stored (a
feature row is written and deleted with its bucket row), the writes driver-level executemany calls.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection

from ..core.encoded_many import encode_merged
from ..core.feature_blob import merged_features
from ..core.stats import BucketStats
from . import pgread, sqlite_rows
from .bulk import _columns, _marks, _pg_columns, chunks

BucketKey = tuple[str, str, str, int, int]
BUCKET_KEY = "model, model_version, variant, bucket_start, shard"
_BUCKET_ARRAYS = "%b::text[], %b::text[], %b::text[], %b::int8[], %b::int[]"
_BUCKET_KINDS = ("text", "text", "text", "int8", "int4")

BUCKETS_PER_MERGE = {"postgresql": 512, "sqlite": 256}
"""Buckets read, added and written back per step of merge_buckets. On PostgreSQL each step is two round trips (the
read, the write), and a 2,000-event batch of the simulated stream touches ~260 buckets: 256 split most batches into
a full step and a tail of a few buckets."""

Before = tuple[str, Sequence[Any], Callable[[list[tuple[Any, ...]]], None]]
"""A statement sent ahead of the first bucket read in its round trip (PostgreSQL): (statement, params, check), where
`check` gets its rows before anything is written (and raises to stop the batch)."""


def _pg_read(table: str, lock: str = "") -> str:
    """PostgreSQL's read of the stored rows of `table` for the keys of unnest's arrays, in key order."""
    return (f"SELECT {BUCKET_KEY}, b.data FROM {table} b JOIN unnest({_BUCKET_ARRAYS}) AS k({BUCKET_KEY}) "
            f"USING ({BUCKET_KEY}) ORDER BY {BUCKET_KEY}{lock}")


PG_BUCKET_READ = _pg_read("buckets", " FOR UPDATE OF b")
PG_FEATURE_READ = _pg_read("bucket_features")
"""No row lock: the batch holds the write lock that every writer of bucket_features takes first (Store.write), and
the bucket rows of the same keys are locked by PG_BUCKET_READ in the same round trip."""
_PG_UPSERT = (f"INSERT INTO buckets ({BUCKET_KEY}, data) SELECT * FROM unnest({_BUCKET_ARRAYS}, %b::bytea[]) "
              f"ON CONFLICT ({BUCKET_KEY}) DO UPDATE SET data = excluded.data")
_PG_FEATURE_UPSERT = (f"WITH f AS (INSERT INTO bucket_features ({BUCKET_KEY}, data) SELECT * FROM "
                      f"unnest({_BUCKET_ARRAYS}, %b::bytea[]) ON CONFLICT ({BUCKET_KEY}) DO UPDATE SET "
                      f"data = excluded.data) {_PG_UPSERT}")
"""Both upserts in one statement (a data-modifying WITH runs to completion whether or not the query reads it)."""


def merge_buckets(conn: Connection, dialect: str, deltas: dict[BucketKey, BucketStats], before: Before | None = None
                  ) -> None:
    """Add each delta to its stored bucket (read, add in encoded form, write back), rows in key order, a few
    hundred buckets at a time (BUCKETS_PER_MERGE) so the stored blobs of a whole batch are never in memory at once.
    `before` (PostgreSQL only): run first, pipelined with the first read (the batch's position fence). The deltas
    come out as they went in (a batch is retried after StalePositions or a COPY fallback)."""
    keys = sorted(deltas)
    if before is not None and not keys:
        before[2](pgread.fetch_binary(conn, before[0], before[1]))
    for chunk in chunks(keys, BUCKETS_PER_MERGE.get(dialect, 256)):
        _merge_chunk(conn, dialect, list(chunk), deltas, before)
        before = None


def _stored_sql(table: str, n: int) -> str:
    """SQLite's read of the stored rows of `table` (buckets or bucket_features) of n keys: each key looked up by the
    primary key (the keys' VALUES first, CROSS JOIN fixing that order). `(key) IN (VALUES ...)`, the same rows,
    scanned the whole table per chunk, so its cost grew with the bucket history."""
    values = ", ".join([f"({_marks(5)})"] * n)
    return ("SELECT b.model, b.model_version, b.variant, b.bucket_start, b.shard, b.data "
            f"FROM (VALUES {values}) AS k CROSS JOIN {table} b ON b.model = k.column1 AND "
            "b.model_version = k.column2 AND b.variant = k.column3 AND b.bucket_start = k.column4 AND "
            "b.shard = k.column5")


def _stored_buckets_sql(n: int) -> str:
    """_stored_sql of the buckets table."""
    return _stored_sql("buckets", n)


def _stored_features_sql(n: int) -> str:
    """_stored_sql of the bucket_features table."""
    return _stored_sql("bucket_features", n)


def _merge_chunk(conn: Connection, dialect: str, keys: list[BucketKey], deltas: dict[BucketKey, BucketStats],
                 before: Before | None = None) -> None:
    """One step of merge_buckets: the chunk's stored rows read, the deltas added, both tables written back."""
    featured = [k for k in keys if deltas[k].features]
    if dialect == "postgresql":
        key_columns = _pg_columns(conn, _columns(keys), _BUCKET_KINDS)
        feature_columns = (key_columns if len(featured) == len(keys) else
                           _pg_columns(conn, _columns(featured), _BUCKET_KINDS)) if featured else ()
        statements = [] if before is None else [(before[0], before[1])]
        statements.append((PG_BUCKET_READ, key_columns))
        if featured:
            statements.append((PG_FEATURE_READ, feature_columns))
        if len(statements) == 1:
            results = [pgread.fetch_binary(conn, PG_BUCKET_READ, key_columns)]
        else:
            results = pgread.fetch_binary_all(conn, statements)
        if before is not None:
            before[2](results.pop(0))
        existing = {r[:5]: r[5] for r in results[0]}
        stored_features = {r[:5]: r[5] for r in results[1]} if featured else {}
    else:
        rows = conn.exec_driver_sql(_stored_buckets_sql(len(keys)), tuple(v for k in keys for v in k))
        existing = {tuple(r[:5]): r[5] for r in rows}
        stored_features = {}
        held = [k for k in featured if k in existing]  # a bucket not stored has no feature row either
        if held:
            rows = conn.exec_driver_sql(_stored_features_sql(len(held)), tuple(v for k in held for v in k))
            stored_features = {tuple(r[:5]): r[5] for r in rows}
    chunk_deltas = list(map(deltas.__getitem__, keys))
    with _without_features(chunk_deltas):
        data = encode_merged(list(map(existing.get, keys)), chunk_deltas)
    feature_data = [merged_features(stored_features.get(k), deltas[k].features) for k in featured]
    if dialect == "postgresql":
        if featured:
            conn.exec_driver_sql(_PG_FEATURE_UPSERT, (*feature_columns, feature_data, *key_columns, data))
        else:
            conn.exec_driver_sql(_PG_UPSERT, (*key_columns, data))
        return
    conn.exec_driver_sql(f"INSERT INTO buckets ({BUCKET_KEY}, data) VALUES ({_marks(6)}) "
                         f"ON CONFLICT ({BUCKET_KEY}) DO UPDATE SET data = excluded.data",
                         [(*k, d) for k, d in zip(keys, data)])
    if featured:  # multi-row statements, the key columns one value in every row as literals (sqlite_rows)
        sqlite_rows.insert_many(conn, f"INSERT INTO bucket_features ({BUCKET_KEY}, data) VALUES ", 6,
                                f"ON CONFLICT ({BUCKET_KEY}) DO UPDATE SET data = excluded.data",
                                [v for k, d in zip(featured, feature_data) for v in (*k, d)], (3, 4))


@contextmanager
def _without_features(deltas: list[BucketStats]) -> Iterator[None]:
    """The deltas with no feature histograms while inside (the `buckets` blob's part: "f": {}), theirs given back
    on the way out, also when an error leaves: a batch is retried with the same deltas."""
    held = [(d, d.features) for d in deltas if d.features]
    for d, _ in held:
        d.features = {}
    try:
        yield
    finally:
        for d, features in held:
            d.features = features
