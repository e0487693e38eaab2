"""Tables of the trigger evaluator (created by migration 0003; trigger_states.fingerprint by 0015_rulefp): current
state per trigger and alert history."""

from __future__ import annotations

from sqlalchemy import BigInteger, Boolean, Column, Float, Index, Integer, MetaData, String, Table

metadata = MetaData()

trigger_states = Table(
    "trigger_states", metadata,
    Column("model", String(200), primary_key=True),
    Column("trigger", String(200), primary_key=True),
    Column("state", String(32), nullable=False),
    Column("since", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    Column("pending_since", Float, nullable=True),
    Column("firing_since", Float, nullable=True),
    Column("last_notified", Float, nullable=True),
    Column("value", Float, nullable=True),
    Column("low", Float, nullable=True),
    Column("high", Float, nullable=True),
    Column("judged", Float, nullable=True),
    Column("n", BigInteger, nullable=True),
    Column("window", String(32), nullable=False),
    Column("fingerprint", String(32), nullable=True),  # Rule.fingerprint of the definition judged; NULL: unknown
)

alert_history = Table(
    "alert_history", metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("at", Float, nullable=False),
    Column("model", String(200), nullable=False),
    Column("trigger", String(200), nullable=False),
    Column("severity", String(16), nullable=False),
    Column("metric", String(100), nullable=False),
    Column("from_state", String(32), nullable=False),
    Column("to_state", String(32), nullable=False),
    Column("value", Float, nullable=True),
    Column("low", Float, nullable=True),
    Column("high", Float, nullable=True),
    Column("judged", Float, nullable=True),
    Column("threshold", Float, nullable=False),
    Column("n", BigInteger, nullable=True),
    Column("window", String(32), nullable=False),
    Column("notified", Boolean, nullable=False),
)
Index("ix_alert_history_model_at", alert_history.c.model, alert_history.c.at)
