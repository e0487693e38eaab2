"""Reference profiles: versioned per model, one active at a time (driftline reference set/list/show).

Revision ID: 0004
Revises: 0001
"""
import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "reference_profiles",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=True),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("start_ts", sa.Float, nullable=True),
        sa.Column("end_ts", sa.Float, nullable=True),
        sa.Column("n", sa.BigInteger, nullable=False),
        sa.Column("variant", sa.String(200), nullable=True),
        sa.Column("detail", sa.Text, nullable=True),
        sa.Column("profile", sa.Text, nullable=False),
        sa.Column("confusion", sa.Text, nullable=True),
        sa.Column("active", sa.Boolean, nullable=False),
    )
    op.create_index("ix_reference_profiles_model_active", "reference_profiles", ["model", "active"])


def downgrade() -> None:
    op.drop_index("ix_reference_profiles_model_active", table_name="reference_profiles")
    op.drop_table("reference_profiles")
