"""Feature samples for multivariate drift: one mergeable sample per bucket and one per reference version.

Revision ID: 0009_mvsample
Revises: 0001
"""
import sqlalchemy as sa
from alembic import op

revision = "0009_mvsample"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "feature_samples",
        sa.Column("model", sa.String(200), primary_key=True),
        sa.Column("model_version", sa.String(200), primary_key=True),
        sa.Column("variant", sa.String(200), primary_key=True),
        sa.Column("bucket_start", sa.BigInteger, primary_key=True),
        sa.Column("span", sa.Integer, nullable=False),
        sa.Column("data", sa.LargeBinary, nullable=False),
    )
    op.create_table(
        "reference_samples",
        sa.Column("reference_id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True),
        sa.Column("data", sa.LargeBinary, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("reference_samples")
    op.drop_table("feature_samples")
