"""Forgetting one model (`driftline models forget`): its stored rows deleted and its label slot freed, in ONE
write transaction, so running `run`/`serve` processes see all of it or none of it.

The write transaction holds the database write lock that ingestion batches and maintenance take (SQLite
BEGIN IMMEDIATE, a PostgreSQL advisory lock: storage.locking), and every batch loads the admitted labels inside
its own write transaction, so a writer sees the freed slot at its next batch. Events of the model arriving later
are a new model: admitted again while a slot is free (fix the producer first).

Per table (every table with a `model` column, migrations 0001-0013):

- deleted: `admitted_labels` (the model, its variants and versions: the slot), `buckets` with their
  `bucket_features`, `predictions` (join state), `feature_samples`, `reference_profiles` with their
  `reference_seasons` and `reference_samples` (keyed by the reference id), `trigger_states` (live state,
  exported), `reports`, and the model's `counters` rows of folded variants and versions (`label_overflow_*`,
  label = model: the `driftline_label_overflow_total` series).
- kept: `outcomes` (keyed by prediction id only, possibly another model's label; they expire at the label
  horizon), `alert_history` (the record of what was judged and notified: an audit trail), `dead_letters` and the
  global counters (what was refused stays refused; `model_limit` counts keep counting).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, delete, func, select

from . import schema as t
from .samples import feature_samples, reference_samples
from .store import Store
from ..core.labels import VARIANT, VERSION, overflow_counter
from ..readouts.references import reference_profiles, reference_seasons
from ..reports.table import reports
from ..triggers.tables import trigger_states

KEPT = {
    "outcomes": "keyed by prediction id only, so possibly another model's label too; they expire at the label horizon",
    "alert_history": "the record of what was judged and notified, an audit trail",
    "dead_letters": "refused events stay, and driftline_dead_letters_total keeps counting",
}
"""Tables with rows of the model that forgetting leaves, and why (printed by the command)."""

OVERFLOW_COUNTERS = (overflow_counter(VARIANT), overflow_counter(VERSION))


@dataclass(frozen=True, slots=True)
class Forgotten:
    """Rows of one model per table (deleted, or that would be), in deletion order."""

    model: str
    rows: dict[str, int]
    outcomes_kept: int = 0
    """Outcomes of the model's stored predictions, left to expire at the label horizon."""

    @property
    def total(self) -> int:
        return sum(self.rows.values())


def _by_model(table: Any, model: str) -> Any:
    return table.c.model == model


def _refs(model: str) -> Any:
    """The ids of the model's reference versions (a subquery)."""
    return select(reference_profiles.c.id).where(reference_profiles.c.model == model).scalar_subquery()


def _wheres(model: str) -> list[tuple[str, Any, Any]]:
    """(name, table, condition) of every row of the model that forgetting deletes; the keyed rows first."""
    ids = _refs(model)
    c = t.counters.c
    return [
        ("reference_seasons", reference_seasons, reference_seasons.c.ref_id.in_(ids)),
        ("reference_samples", reference_samples, reference_samples.c.reference_id.in_(ids)),
        ("reference_profiles", reference_profiles, _by_model(reference_profiles, model)),
        ("feature_samples", feature_samples, _by_model(feature_samples, model)),
        ("bucket_features", t.bucket_features, _by_model(t.bucket_features, model)),
        ("buckets", t.buckets, _by_model(t.buckets, model)),
        ("predictions", t.predictions, _by_model(t.predictions, model)),
        ("trigger_states", trigger_states, _by_model(trigger_states, model)),
        ("reports", reports, _by_model(reports, model)),
        ("counters", t.counters, c.name.in_(OVERFLOW_COUNTERS) & (c.label == model)),
        ("admitted_labels", t.admitted_labels, _by_model(t.admitted_labels, model)),
    ]


def count_rows(conn: Connection, model: str) -> Forgotten:
    """Rows of the model per table, read in the caller's transaction."""
    rows = {name: int(conn.execute(select(func.count()).select_from(table).where(where)).scalar_one())
            for name, table, where in _wheres(model)}
    return Forgotten(model, rows, _outcomes_of(conn, model))


def _outcomes_of(conn: Connection, model: str) -> int:
    """Outcomes of the model's stored predictions (left to expire at the label horizon)."""
    p, o = t.predictions.c, t.outcomes.c
    q = select(func.count()).select_from(t.outcomes).where(
        o.prediction_id.in_(select(p.prediction_id).where(p.model == model)))
    return int(conn.execute(q).scalar_one())


def preview(store: Store, model: str) -> Forgotten:
    """What forgetting the model would delete (nothing is changed)."""
    with store.read() as conn:
        return count_rows(conn, model)


def forget(store: Store, model: str) -> Forgotten:
    """Delete every row of the model listed in this module's docstring, in one write transaction under the write
    lock (WriteLocked / StoreUnavailable: nothing deleted); the rows deleted per table."""
    with store.write() as conn:
        counted = count_rows(conn, model)
        for name, table, where in _wheres(model):
            if counted.rows[name]:
                conn.execute(delete(table).where(where))
    return counted
