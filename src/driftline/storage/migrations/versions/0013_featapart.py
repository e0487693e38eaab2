"""Feature histograms stored apart: each bucket's "f" (its feature histograms) moves from its `buckets` blob to a row
of the new `bucket_features` table (storage/bucket_writes.py, core/feature_blob.py), the blob keeping "f": {}.

A batch's label moves (~99.5 % of the buckets it writes) change no feature histogram, yet read, decoded, re-encoded
and rewrote them with the rest of the blob (~40 % of its bytes); the metrics queries never use them but read their
bytes. Every other byte of a blob stays as it was: msgpack decode and encode of a blob msgspec wrote give the same
bytes, and "f" keeps its place among the keys, so the downgrade, which folds the rows back, restores the blobs byte
for byte. Rows are moved in key order a chunk at a time (keyset pages), so a big store is never held in memory.
An older driftline sees this revision as unknown and refuses the store (SchemaTooNew): it would read no features.

Revision ID: 0013_featapart
Revises: 0001
"""
from collections.abc import Iterator
from typing import Any

import msgspec
import sqlalchemy as sa
from alembic import op

revision = "0013_featapart"
down_revision = "0001"
branch_labels = None
depends_on = None

CHUNK = 1000
"""Rows per keyset page."""
KEY = ("model", "model_version", "variant", "bucket_start", "shard")
_COLS = ", ".join(KEY)
_AFTER = f"({', '.join('b.' + k for k in KEY)}) > (:k0, :k1, :k2, :k3, :k4)"
_WHERE_KEY = " AND ".join(f"{k} = :{k}" for k in KEY)


def _pages(bind: Any, select: str) -> Iterator[list[Any]]:
    """The rows of `select` (key columns first; `{after}` in it for the page condition) in key order, CHUNK at a
    time, each page read after the last key of the one before."""
    last = None
    while True:
        where = "TRUE" if last is None else _AFTER
        params = {} if last is None else {f"k{i}": v for i, v in enumerate(last)}
        rows = list(bind.execute(sa.text(select.format(after=where) + f" ORDER BY {', '.join('b.' + k for k in KEY)}"
                                         f" LIMIT {CHUNK}"), params))
        if not rows:
            return
        yield rows
        last = tuple(rows[-1][:5])


def upgrade() -> None:
    op.create_table(
        "bucket_features",
        sa.Column("model", sa.String(200), primary_key=True),
        sa.Column("model_version", sa.String(200), primary_key=True),
        sa.Column("variant", sa.String(200), primary_key=True),
        sa.Column("bucket_start", sa.BigInteger, primary_key=True),
        sa.Column("shard", sa.Integer, primary_key=True),
        sa.Column("data", sa.LargeBinary, nullable=False),
    )
    bind = op.get_bind()
    decode, encode = msgspec.msgpack.decode, msgspec.msgpack.encode
    for rows in _pages(bind, f"SELECT {', '.join('b.' + k for k in KEY)}, b.data FROM buckets b WHERE {{after}}"):
        moved, emptied = [], []
        for r in rows:
            try:
                doc = decode(r.data)
            except msgspec.DecodeError:  # not a blob a driftline wrote (damaged, a placeholder): left as it is, so
                continue  # readers meet it as before, and one bad row cannot keep a store from upgrading
            feats = doc.get("f") if type(doc) is dict else None
            if not feats or type(feats) is not dict:
                continue
            key = dict(zip(KEY, r[:5]))
            moved.append({**key, "data": encode(feats)})
            doc["f"] = {}
            emptied.append({**key, "data": encode(doc)})
        if moved:
            bind.execute(sa.text(f"INSERT INTO bucket_features ({_COLS}, data) VALUES "
                                 f"({', '.join(':' + k for k in KEY)}, :data)"), moved)
            bind.execute(sa.text(f"UPDATE buckets SET data = :data WHERE {_WHERE_KEY}"), emptied)


def downgrade() -> None:
    from driftline.core.feature_blob import decode_features, merged_features

    bind = op.get_bind()
    decode, encode = msgspec.msgpack.decode, msgspec.msgpack.encode
    for rows in _pages(bind, f"SELECT {', '.join('b.' + k for k in KEY)}, b.data, f.data AS fdata FROM buckets b "
                             f"JOIN bucket_features f USING ({_COLS}) WHERE {{after}}"):
        folded = []
        for r in rows:
            doc = decode(r.data)
            if doc.get("f"):  # not written by driftline (its blobs hold "f": {} here): both summed
                doc["f"] = decode(merged_features(encode(doc["f"]), decode_features(r.fdata)))
            else:
                doc["f"] = decode(r.fdata)
            folded.append({**dict(zip(KEY, r[:5])), "data": encode(doc)})
        bind.execute(sa.text(f"UPDATE buckets SET data = :data WHERE {_WHERE_KEY}"), folded)
    op.drop_table("bucket_features")
