"""Core tables: buckets, join state, dead letters, source positions, counters, meta.

Revision ID: 0001
Revises:
"""
import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "buckets",
        sa.Column("model", sa.String(200), primary_key=True),
        sa.Column("model_version", sa.String(200), primary_key=True),
        sa.Column("variant", sa.String(200), primary_key=True),
        sa.Column("bucket_start", sa.BigInteger, primary_key=True),
        sa.Column("shard", sa.Integer, primary_key=True),
        sa.Column("data", sa.LargeBinary, nullable=False),
    )
    op.create_index("ix_buckets_model_start", "buckets", ["model", "bucket_start"])
    op.create_table(
        "predictions",
        sa.Column("prediction_id", sa.String(200), primary_key=True),
        sa.Column("model", sa.String(200), primary_key=True),
        sa.Column("variant", sa.String(200), primary_key=True),
        sa.Column("model_version", sa.String(200), nullable=False),
        sa.Column("ts", sa.Float, nullable=False),
        sa.Column("score", sa.Float, nullable=False),
        sa.Column("flagged", sa.Boolean, nullable=False),
        sa.Column("shard", sa.Integer, nullable=False),
        sa.Column("label", sa.SmallInteger, nullable=True),
        sa.Column("label_ts", sa.Float, nullable=True),
        sa.Column("implicit", sa.Boolean, nullable=False),
    )
    op.create_index("ix_predictions_shard_ts", "predictions", ["shard", "ts"])
    op.create_table(
        "outcomes",
        sa.Column("prediction_id", sa.String(200), primary_key=True),
        sa.Column("label", sa.SmallInteger, nullable=False),
        sa.Column("ts", sa.Float, nullable=False),
        sa.Column("shard", sa.Integer, nullable=False),
        sa.Column("matched", sa.Boolean, nullable=False),
    )
    op.create_index("ix_outcomes_shard_ts", "outcomes", ["shard", "ts"])
    op.create_table(
        "dead_letters",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=True),
        sa.Column("received_at", sa.Float, nullable=False),
        sa.Column("reason", sa.String(64), nullable=False),
        sa.Column("detail", sa.Text, nullable=False),
        sa.Column("source", sa.String(500), nullable=False),
        sa.Column("partition", sa.Integer, nullable=False),
        sa.Column("offset", sa.BigInteger, nullable=False),
        sa.Column("raw", sa.LargeBinary, nullable=False),
    )
    op.create_index("ix_dead_letters_reason", "dead_letters", ["reason"])
    op.create_table(
        "positions",
        sa.Column("source", sa.String(500), primary_key=True),
        sa.Column("partition", sa.Integer, primary_key=True),
        sa.Column("next_offset", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "counters",
        sa.Column("name", sa.String(100), primary_key=True),
        sa.Column("label", sa.String(200), primary_key=True),
        sa.Column("value", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "meta",
        sa.Column("key", sa.String(200), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
    )


def downgrade() -> None:
    for name in ("meta", "counters", "positions", "dead_letters", "outcomes", "predictions", "buckets"):
        op.drop_table(name)
