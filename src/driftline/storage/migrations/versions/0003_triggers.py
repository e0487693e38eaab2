"""Trigger evaluator: current state per (model, trigger) and the alert history of state transitions.

Revision ID: 0003
Revises: 0001
"""
import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "trigger_states",
        sa.Column("model", sa.String(200), primary_key=True),
        sa.Column("trigger", sa.String(200), primary_key=True),
        sa.Column("state", sa.String(32), nullable=False),
        sa.Column("since", sa.Float, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
        sa.Column("pending_since", sa.Float, nullable=True),
        sa.Column("firing_since", sa.Float, nullable=True),
        sa.Column("last_notified", sa.Float, nullable=True),
        sa.Column("value", sa.Float, nullable=True),
        sa.Column("low", sa.Float, nullable=True),
        sa.Column("high", sa.Float, nullable=True),
        sa.Column("judged", sa.Float, nullable=True),
        sa.Column("n", sa.BigInteger, nullable=True),
        sa.Column("window", sa.String(32), nullable=False),
    )
    op.create_table(
        "alert_history",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=True),
        sa.Column("at", sa.Float, nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("trigger", sa.String(200), nullable=False),
        sa.Column("severity", sa.String(16), nullable=False),
        sa.Column("metric", sa.String(100), nullable=False),
        sa.Column("from_state", sa.String(32), nullable=False),
        sa.Column("to_state", sa.String(32), nullable=False),
        sa.Column("value", sa.Float, nullable=True),
        sa.Column("low", sa.Float, nullable=True),
        sa.Column("high", sa.Float, nullable=True),
        sa.Column("judged", sa.Float, nullable=True),
        sa.Column("threshold", sa.Float, nullable=False),
        sa.Column("n", sa.BigInteger, nullable=True),
        sa.Column("window", sa.String(32), nullable=False),
        sa.Column("notified", sa.Boolean, nullable=False),
    )
    op.create_index("ix_alert_history_model_at", "alert_history", ["model", "at"])


def downgrade() -> None:
    op.drop_index("ix_alert_history_model_at", table_name="alert_history")
    op.drop_table("alert_history")
    op.drop_table("trigger_states")
