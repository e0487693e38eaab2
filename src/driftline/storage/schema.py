"""Database tables (SQLAlchemy Core); Alembic migrations in driftline/storage/migrations create them."""

from __future__ import annotations

from typing import Any

from sqlalchemy import (BigInteger, Boolean, Column, Float, Index, Integer, LargeBinary, MetaData, SmallInteger,
                        String, Table, Text)

metadata = MetaData()

buckets = Table(
    "buckets", metadata,
    Column("model", String(200), primary_key=True),
    Column("model_version", String(200), primary_key=True),
    Column("variant", String(200), primary_key=True),
    Column("bucket_start", BigInteger, primary_key=True),
    Column("shard", Integer, primary_key=True),
    Column("data", LargeBinary, nullable=False),
)
Index("ix_buckets_model_start", buckets.c.model, buckets.c.bucket_start)

bucket_features = Table(
    "bucket_features", metadata,
    Column("model", String(200), primary_key=True),
    Column("model_version", String(200), primary_key=True),
    Column("variant", String(200), primary_key=True),
    Column("bucket_start", BigInteger, primary_key=True),
    Column("shard", Integer, primary_key=True),
    Column("data", LargeBinary, nullable=False),
)
"""A bucket's feature histograms (core.feature_blob), apart from its other statistics in `buckets` (whose blob then
holds "f": {}): a row only for the buckets that have some (migration 0013_featapart). A batch's label moves touch
only `buckets`, and the metrics queries read only `buckets`."""

predictions = Table(
    "predictions", metadata,
    Column("prediction_id", String(200), primary_key=True),
    Column("model", String(200), primary_key=True),
    Column("variant", String(200), primary_key=True),
    Column("model_version", String(200), nullable=False),
    Column("ts", Float, nullable=False),
    Column("score", Float, nullable=False),
    Column("flagged", Boolean, nullable=False),
    Column("shard", Integer, nullable=False),
    Column("label", SmallInteger, nullable=True),
    Column("label_ts", Float, nullable=True),
    Column("implicit", Boolean, nullable=False, default=False),
    Column("slice_values", Text, nullable=True),
)
Index("ix_predictions_shard_ts", predictions.c.shard, predictions.c.ts)

outcomes = Table(
    "outcomes", metadata,
    Column("prediction_id", String(200), primary_key=True),
    Column("label", SmallInteger, nullable=False),
    Column("ts", Float, nullable=False),
    Column("shard", Integer, nullable=False),
    Column("matched", Boolean, nullable=False),
)
Index("ix_outcomes_shard_ts", outcomes.c.shard, outcomes.c.ts)

dead_letters = Table(
    "dead_letters", metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("received_at", Float, nullable=False),
    Column("reason", String(64), nullable=False),
    Column("detail", Text, nullable=False),
    Column("source", String(500), nullable=False),
    Column("partition", Integer, nullable=False),
    Column("offset", BigInteger, nullable=False),
    Column("raw", LargeBinary, nullable=False),
)
Index("ix_dead_letters_reason", dead_letters.c.reason)

positions = Table(
    "positions", metadata,
    Column("source", String(500), primary_key=True),
    Column("partition", Integer, primary_key=True),
    Column("next_offset", BigInteger, nullable=False),
)

counters = Table(
    "counters", metadata,
    Column("name", String(100), primary_key=True),
    Column("label", String(200), primary_key=True),
    Column("value", BigInteger, nullable=False),
)

meta = Table(
    "meta", metadata,
    Column("key", String(200), primary_key=True),
    Column("value", Text, nullable=False),
)

admitted_labels = Table(
    "admitted_labels", metadata,
    Column("model", String(200), primary_key=True),
    Column("kind", String(16), primary_key=True),
    Column("value", String(200), primary_key=True),
    Column("admitted_at", Float, nullable=True),
)
"""Label values admitted under `limits:` (kind model/variant/model_version; a model's own row has value ''):
the same set for every writer and across restarts. admitted_at is NULL for values stored before the limits."""


def for_series(q: Any, c: Any, model: str | None, variant: str | None = None, model_version: str | None = None) -> Any:
    """`q` narrowed to a model, variant and model version, each where given (`c`: the queried table's columns)."""
    if model is not None:
        q = q.where(c.model == model)
    if variant is not None:
        q = q.where(c.variant == variant)
    if model_version is not None:
        q = q.where(c.model_version == model_version)
    return q
