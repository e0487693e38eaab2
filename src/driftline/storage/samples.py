"""Stored feature samples (migration 0009_mvsample): one mergeable sample per bucket, one per reference.

`feature_samples` holds, per (model, model_version, variant, bucket start), the bucket's FeatureSample
(driftline.core.sample) as bytes; shards and writers merge into the same row inside their write transaction,
which holds the database write lock, so a read-merge-write never loses an update. `reference_samples` holds
the sample frozen with a reference version.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import (BigInteger, Column, Connection, Integer, LargeBinary, MetaData, Select, String, Table, and_,
                        select)

from . import bulk, pgread
from . import schema as t
from ..core.encoded import encoded_counts
from ..core.sample import FeatureSample, decode_sample, encode_sample, merge_encoded, merge_samples
from ..core.sample_columns import SampleColumns, encoded, merged_encoded
from .store import Store

SampleKey = tuple[str, str, str, int]
"""(model, model_version, variant, bucket start in epoch seconds)."""

metadata = MetaData()

feature_samples = Table(
    "feature_samples", metadata,
    Column("model", String(200), primary_key=True),
    Column("model_version", String(200), primary_key=True),
    Column("variant", String(200), primary_key=True),
    Column("bucket_start", BigInteger, primary_key=True),
    Column("span", Integer, nullable=False),
    Column("data", LargeBinary, nullable=False),
)
"""`span`: seconds the row covers (the bucket width; a day once compacted, see compact_samples)."""

reference_samples = Table(
    "reference_samples", metadata,
    Column("reference_id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True),
    Column("data", LargeBinary, nullable=False),
)


def merge_into(conn: Connection, deltas: Mapping[SampleKey, FeatureSample | SampleColumns], k: int, span: int
               ) -> None:
    """Merge the batch's per-bucket samples (buckets `span` seconds wide) into the stored ones (call inside
    Store.write). A write into the first bucket of a compacted day merges into the day's row: merging is a union.

    Driver-level statements (why: a Core select plus insert or update per bucket cost a compile and a round each,
    ~16 % of replay): the stored blobs are read a few hundred keys per statement, rows in key order (locked on
    PostgreSQL), then changed rows are rewritten with one executemany and new rows inserted with another. On
    PostgreSQL a new row that another transaction inserted meanwhile (which the write lock rules out, but a row
    that does not exist yet cannot be row-locked) is not overwritten: it is read again, locked, and merged into."""
    keys = sorted(deltas)
    dialect = conn.dialect.name
    for chunk in bulk.chunks(keys, 256):
        todo = list(chunk)
        while todo:
            todo = _merge_chunk(conn, dialect, todo, deltas, k, span)


def _merge_chunk(conn: Connection, dialect: str, keys: list[SampleKey],
                 deltas: Mapping[SampleKey, FeatureSample | SampleColumns], k: int, span: int) -> list[SampleKey]:
    """Merge these keys' samples; returns the keys whose insert found a row already there (to merge again)."""
    existing = _stored(conn, dialect, keys)
    new: list[tuple[Any, ...]] = []
    changed: list[tuple[Any, ...]] = []
    for key in keys:
        old = existing.get(key)
        if old is None:
            new.append((*key, span, encoded(deltas[key])))
            continue
        data = merged_encoded(old, deltas[key], k)
        if data != old:
            changed.append((data, *key))
    mark = "%s" if dialect == "postgresql" else "?"
    if changed:
        conn.exec_driver_sql(f"UPDATE feature_samples SET data = {mark} WHERE model = {mark} AND model_version = "
                             f"{mark} AND variant = {mark} AND bucket_start = {mark}", changed)
    if not new:
        return []
    if dialect != "postgresql":  # one writer at a time holds the database: nothing can have appeared
        conn.exec_driver_sql(f"INSERT INTO feature_samples ({_SAMPLE_KEY}, span, data) VALUES (?, ?, ?, ?, ?, ?)",
                             new)
        return []
    cols = tuple(map(list, zip(*new)))
    inserted = conn.exec_driver_sql(
        f"INSERT INTO feature_samples ({_SAMPLE_KEY}, span, data) SELECT * FROM unnest(%b::text[], %b::text[], "
        f"%b::text[], %b::int8[], %b::int[], %b::bytea[]) ON CONFLICT ({_SAMPLE_KEY}) DO NOTHING "
        f"RETURNING {_SAMPLE_KEY}", cols)
    done = {(r[0], r[1], r[2], int(r[3])) for r in inserted}
    return [key for key in (tuple(row[:4]) for row in new) if key not in done]  # type: ignore[misc]


_SAMPLE_KEY = "model, model_version, variant, bucket_start"


def _stored(conn: Connection, dialect: str, keys: list[SampleKey]) -> dict[SampleKey, bytes]:
    """The stored blob per key (keys absent from the table are absent from the result)."""
    if dialect == "postgresql":  # the blobs as bytes, not hex text (pgread)
        rows = pgread.fetch_binary(
            conn, f"SELECT {_SAMPLE_KEY}, s.data FROM feature_samples s JOIN unnest(%b::text[], %b::text[], "
            f"%b::text[], %b::int8[]) AS k({_SAMPLE_KEY}) USING ({_SAMPLE_KEY}) ORDER BY {_SAMPLE_KEY} FOR UPDATE OF s",
            tuple(map(list, zip(*keys))))
    else:
        # each key looked up by the primary key (CROSS JOIN fixes the order): `(key) IN (VALUES ...)` gave the
        # same rows but scanned the whole table per call, a cost growing with the sample history
        values = ", ".join(["(?, ?, ?, ?)"] * len(keys))
        rows = conn.exec_driver_sql(
            "SELECT s.model, s.model_version, s.variant, s.bucket_start, s.data "
            f"FROM (VALUES {values}) AS k CROSS JOIN feature_samples s ON s.model = k.column1 AND "
            "s.model_version = k.column2 AND s.variant = k.column3 AND s.bucket_start = k.column4",
            tuple(v for key in keys for v in key))
    return {(r[0], r[1], r[2], int(r[3])): bytes(r[4]) for r in rows}


def _within(q: Select[Any], model: str, start: float, end: float, variant: str | None) -> Select[Any]:
    """The query restricted to the model's rows lying within [start, end) (and the variant's)."""
    c = feature_samples.c
    q = q.where(c.model == model, c.bucket_start >= start, c.bucket_start + c.span <= end)
    return q if variant is None else q.where(c.variant == variant)


def bucket_samples(store: Store, model: str, start: float, end: float, variant: str | None = None
                   ) -> list[tuple[SampleKey, FeatureSample]]:
    """The stored samples of the model's rows lying within [start, end) (one variant's, when given); a compacted
    day that the range cuts is left out, as readouts.windows.window_rows leaves out its bucket."""
    with store.read() as conn:
        return [((r.model, r.model_version, r.variant, int(r.bucket_start)), decode_sample(r.data))
                for r in conn.execute(_within(select(feature_samples), model, start, end, variant))]


def window_sample(store: Store, model: str, start: float, end: float, k: int, variant: str | None = None
                  ) -> FeatureSample:
    """The merged sample of [start, end): a uniform sample of the window's predictions, at most k rows."""
    q = _within(select(feature_samples.c.data), model, start, end, variant)
    with store.read() as conn:
        return merge_encoded((r.data for r in conn.execute(q)), k)


def compact_samples(store: Store, cutoff: float | None, k: int, width: int = 86400, max_groups: int = 2000) -> int:
    """Merge the samples of buckets starting before `cutoff` into one row of k per (model, version, variant, day)
    (the same cutoff as storage.compaction), so old history keeps k rows a day instead of k an hour. One
    transaction per day; returns the days merged (at most max_groups per call, the rest next time)."""
    if cutoff is None:
        return 0
    c = feature_samples.c
    q = select(c.model, c.model_version, c.variant, c.bucket_start).where(c.bucket_start < cutoff, c.span < width)
    with store.read() as conn:
        days = sorted({(r.model, r.model_version, r.variant, int(r.bucket_start) // width * width)
                       for r in conn.execute(q)})[:max_groups]
    for model, version, variant, day in days:
        with store.write() as conn:
            where = and_(c.model == model, c.model_version == version, c.variant == variant,
                         c.bucket_start >= day, c.bucket_start < day + width)
            rows = list(conn.execute(select(c.bucket_start, c.data).where(where)))
            if not rows:  # deleted since listed (`models forget`): writing a merged row would bring it back
                continue
            merged = merge_samples((decode_sample(r.data) for r in rows), k)
            conn.execute(feature_samples.delete().where(where))
            conn.execute(feature_samples.insert().values(model=model, model_version=version, variant=variant,
                                                         bucket_start=day, span=width, data=encode_sample(merged)))
    return len(days)


def save_reference_sample(store: Store, reference_id: int, sample: FeatureSample) -> None:
    """Freeze a sample with a reference version (replaces one stored for the same id)."""
    c = reference_samples.c
    with store.write() as conn:
        conn.execute(reference_samples.delete().where(c.reference_id == reference_id))
        conn.execute(reference_samples.insert().values(reference_id=reference_id, data=encode_sample(sample)))


def unsampled_predictions(store: Store, model: str, start: float, end: float, variant: str | None = None) -> int:
    """Predictions in stored buckets of [start, end) that no feature-sample row covers: stored by a driftline from
    before multivariate drift (migration 0009_mvsample), whose samples can never be made again from the buckets."""
    b, c = t.buckets.c, feature_samples.c
    q = t.for_series(select(b.model_version, b.variant, b.bucket_start, b.data).where(
        b.model == model, b.bucket_start >= start, b.bucket_start < end), b, None, variant)
    s = t.for_series(select(c.model_version, c.variant, c.bucket_start, c.span).where(
        c.model == model, c.bucket_start < end, c.bucket_start + c.span > start), c, None, variant)
    with store.read() as conn:
        spans: dict[tuple[str, str], list[tuple[int, int]]] = {}
        for r in conn.execute(s):
            spans.setdefault((r.model_version, r.variant), []).append((int(r.bucket_start), int(r.span)))
        for rows in spans.values():
            rows.sort()
        missing = 0
        for r in conn.execute(q):
            rows = spans.get((r.model_version, r.variant), [])
            i = bisect_right(rows, (int(r.bucket_start), 2**62)) - 1  # the last row starting at or before it
            if i < 0 or rows[i][0] + rows[i][1] <= r.bucket_start:
                missing += encoded_counts(r.data)[0]
    return missing


def reference_sample(store: Store, reference_id: int) -> FeatureSample | None:
    """The sample frozen with a reference version; None for a reference set without one."""
    c = reference_samples.c
    with store.read() as conn:
        data = conn.execute(select(c.data).where(c.reference_id == reference_id)).scalar_one_or_none()
    return None if data is None else decode_sample(data)


def stored_bytes(store: Store, model: str | None = None) -> Iterable[int]:
    """Bytes of each stored bucket sample (for the documented storage figures)."""
    c = feature_samples.c
    q = select(c.data) if model is None else select(c.data).where(c.model == model)
    with store.read() as conn:
        return [len(r.data) for r in conn.execute(q)]
