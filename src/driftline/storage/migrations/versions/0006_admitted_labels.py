"""Admitted label values (limits: max_models, max_variants_per_model, max_versions_per_model), seeded with the
models, variants and versions already stored so that an upgrade hides nothing.

Revision ID: 0006_labels
Revises: 0001
"""
import sqlalchemy as sa
from alembic import op

revision = "0006_labels"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "admitted_labels",
        sa.Column("model", sa.String(200), primary_key=True),
        sa.Column("kind", sa.String(16), primary_key=True),
        sa.Column("value", sa.String(200), primary_key=True),
        sa.Column("admitted_at", sa.Float, nullable=True),
    )
    for kind, column in (("model", "''"), ("variant", "variant"), ("model_version", "model_version")):
        op.execute(f"INSERT INTO admitted_labels (model, kind, value) SELECT DISTINCT model, '{kind}', {column} "
                   "FROM buckets")


def downgrade() -> None:
    op.drop_table("admitted_labels")
