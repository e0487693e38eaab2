"""Weekly reports: one stored report per (model, ISO week) with its JSON, HTML and Markdown renderings.

Revision ID: 0005
Revises: 0001
"""
import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "reports",
        sa.Column("model", sa.String(200), primary_key=True),
        sa.Column("week", sa.String(10), primary_key=True),
        sa.Column("window_start", sa.Float, nullable=False),
        sa.Column("window_end", sa.Float, nullable=False),
        sa.Column("generated_at", sa.Float, nullable=False),
        sa.Column("provisional", sa.Boolean, nullable=False),
        sa.Column("source", sa.String(32), nullable=False),
        sa.Column("doc", sa.Text, nullable=False),
        sa.Column("html", sa.Text, nullable=False),
        sa.Column("markdown", sa.Text, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("reports")
