"""driftline's PostgreSQL sessions compress new blobs (buckets, feature samples) with lz4 where the server has it and
nobody chose otherwise (storage/pgsession.py): the values stored are the same bytes; a database whose administrator
set `default_toast_compression` keeps that choice."""

from __future__ import annotations

import psycopg
import pytest
from sqlalchemy import text

from driftline.config import from_dict
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.storage.store import Store

from helpers import outcome, pred

T0 = 1_700_000_000.0
FEATURES = {**{f"f{k}": "categorical" for k in range(8)}, "amount": "numeric"}


def _lz4_available(libpq_url: str) -> bool:
    with psycopg.connect(libpq_url) as conn:
        row = conn.execute("SELECT 'lz4' = ANY(enumvals) FROM pg_settings "
                           "WHERE name = 'default_toast_compression'").fetchone()
    return bool(row and row[0])


def _ingest(url: str) -> dict[tuple, tuple[bytes, str | None]]:
    """A few days of events with features stored; every bucket's bytes and how the server compressed them."""
    store = Store(url, clock=lambda: T0 + 30 * 86400)
    store.migrate()
    raws = []
    for i in range(600):  # features with many values: blobs past the TOAST threshold (compressed)
        raws.append(pred(f"p{i}", (i % 97) / 97, T0 + i * 3,
                         features={f"f{k}": f"v{(i * (k + 3)) % 200}" for k in range(8)} | {"amount": i * 1.5}))
        if i % 2:
            raws.append(outcome(f"p{i}", int(i % 3 == 0), T0 + i * 3 + 60))
    records = [RawRecord("file:x", 0, i, r) for i, r in enumerate(raws)]
    Pipeline(from_dict({"features": FEATURES}), store).process_batch(records)
    with store.read() as conn:
        rows = conn.execute(text("SELECT model, model_version, variant, bucket_start, shard, data, "
                                 "pg_column_compression(data) FROM buckets ORDER BY 1, 2, 3, 4, 5")).all()
    store.close()
    return {tuple(r[:5]): (bytes(r[5]), r[6]) for r in rows}


def test_new_blobs_are_lz4_compressed_and_read_back_unchanged(pg_database) -> None:
    if not _lz4_available(pg_database.libpq_url):
        pytest.skip("this PostgreSQL server has no lz4")
    stored = _ingest(pg_database.url)
    methods = {m for _, m in stored.values()}
    assert methods != {None}, "no bucket blob was large enough to be compressed"
    assert methods - {None} == {"lz4"}


def test_blobs_are_the_same_bytes_as_under_pglz(pg_database, pg_url) -> None:
    """The same events into a database pinned to pglz by its administrator: same bytes, pglz kept there."""
    with psycopg.connect(pg_database.libpq_url, autocommit=True) as conn:
        other = f"{pg_database.name}_pglz"
        conn.execute(f'CREATE DATABASE "{other}"')
    try:
        with psycopg.connect(pg_database.libpq_url, autocommit=True) as conn:
            conn.execute(f"ALTER DATABASE \"{other}\" SET default_toast_compression = 'pglz'")
        pinned = _ingest(pg_url.rsplit("/", 1)[0] + "/" + other)
    finally:
        with psycopg.connect(pg_database.libpq_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{other}" WITH (FORCE)')
    default = _ingest(pg_url)
    assert {k: v[0] for k, v in pinned.items()} == {k: v[0] for k, v in default.items()}
    assert "lz4" not in {m for _, m in pinned.values()}  # the administrator's pglz (which may give up on them)
