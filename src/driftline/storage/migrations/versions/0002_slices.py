"""Slice values on the join state, so late labels move per-slice counts too.

Idempotent: a database migrated by e9a095d (2026-12-01, whose 0010_joinpack named 0002 in `depends_on`, so
Alembic stored 0010 in place of 0002) holds the column but not this revision, and the next upgrade runs it again.

Revision ID: 0002
Revises: 0001
"""
import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if any(c["name"] == "slice_values" for c in sa.inspect(op.get_bind()).get_columns("predictions")):
        return  # already added (see above): recording the revision is all that is left
    with op.batch_alter_table("predictions") as batch:
        batch.add_column(sa.Column("slice_values", sa.Text, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("predictions") as batch:
        batch.drop_column("slice_values")
