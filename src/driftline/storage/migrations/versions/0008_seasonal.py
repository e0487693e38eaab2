"""Seasonal references: per reference version, its seasonality (hour_of_day, day_of_week, both) and its per-season
slices (JSON). A table of its own keyed by the reference id, so plain references need no row and no migration
touches reference_profiles (which 0004, another branch from 0001, creates).

Revision ID: 0008_seasonal
Revises: 0001
"""
import sqlalchemy as sa
from alembic import op

revision = "0008_seasonal"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "reference_seasons",
        sa.Column("ref_id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True,
                  autoincrement=False),
        sa.Column("seasonality", sa.String(16), nullable=False),
        sa.Column("seasons", sa.Text, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("reference_seasons")
