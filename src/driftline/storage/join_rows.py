"""The join state as rows: a `predictions` row per held prediction and an `outcomes` row per held outcome, kept
until the label horizon. Every read and write of the join state goes through here (the batch's lookups and
writes, maintenance, the exact ranking read, shadow pairs), so its layout can change in this one module.

A prediction row is written once (and again only when it matures into an implicit negative): its label in force is
its outcome row's (label, ts, not implicit) when one is held for its id, else the row's own label columns
(issue 18: relabelling days-old rows rewrote scattered pages of the table). Every reader here joins the outcomes
for it; an outcome row is folded into its predictions' rows before it is deleted, so no label is lost.

Statements run in the caller's connection and transaction; the SQL of the hot path is in bulk.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from sqlalchemy import Connection, and_, delete, exists, func, or_, select, tuple_, update

from . import bulk
from . import schema as t
from ..core.engine import EngineResult, JoinView, OutcomeRecord, PredRecord, label_in_force

ShadowCells = tuple[list[tuple[int | None, bool, bool, int]], dict[str, int]]
"""([(label, flagged by control, flagged by treatment, predictions)], predictions per variant) of a shadow pair."""


SQLITE_FOLD_OUTCOME = (
    "UPDATE predictions SET (label, label_ts, implicit) = (SELECT o.label, o.ts, 0 FROM outcomes o "
    "WHERE o.prediction_id = predictions.prediction_id) WHERE prediction_id = ? AND EXISTS (SELECT 1 FROM outcomes o "
    "WHERE o.prediction_id = predictions.prediction_id AND (predictions.label IS NOT o.label OR "
    "predictions.label_ts IS NOT o.ts OR predictions.implicit))")
"""fold_outcomes on SQLite, executed once per id."""

SQLITE_DELETE_PREDICTION = "DELETE FROM predictions WHERE prediction_id = ? AND model = ? AND variant = ?"
"""A join row dropped by its primary key (PredKey order), executed once per key."""


class JoinRows:
    """The join state of one database (its SQL dialect decides the statements)."""

    def __init__(self, dialect: str) -> None:
        self.dialect = dialect

    # --- the ingestion batch ----------------------------------------------------------------------
    def load(self, conn: Connection, ids: Iterable[str]) -> JoinView:
        """Predictions and outcomes held for these prediction ids (read under the write lock the caller holds)."""
        return bulk.load_join(conn, self.dialect, ids)

    def write(self, conn: Connection, result: EngineResult) -> None:
        """A batch's join-state changes: new and matured predictions, outcomes (which carry the label in force of
        stored predictions), and the rows it dropped (an outcome folded into its predictions' rows first)."""
        stored = result.stored
        if self.dialect == "postgresql" and stored is not None:  # both tables' new rows copied under one savepoint
            pred_rows, out_rows = bulk.copy_new_join_rows(conn, list(result.upserts.values()),
                                                          list(result.outcomes.values()), stored)
            bulk.upsert_predictions(conn, pred_rows)
        else:
            bulk.write_predictions(conn, self.dialect, list(result.upserts.values()), stored and stored.preds)
        p = t.predictions.c
        if self.dialect == "sqlite" and result.deletes:  # one primary-key lookup a row: SQLite ran the row-value IN
            # list below as a scan of the (shard, ts) index per chunk, so expiring n rows cost ~n/500 scans of the table
            conn.exec_driver_sql(SQLITE_DELETE_PREDICTION, sorted(result.deletes))
        else:
            for chunk in bulk.chunks(sorted(result.deletes)):
                conn.execute(delete(t.predictions).where(tuple_(p.prediction_id, p.model, p.variant).in_(list(chunk))))
        if self.dialect == "postgresql" and stored is not None:
            bulk.upsert_outcomes(conn, out_rows)
        else:
            bulk.write_outcomes(conn, self.dialect, list(result.outcomes.values()), stored and stored.outcomes)
        for chunk in bulk.chunks(sorted(result.outcome_deletes)):
            fold_outcomes(conn, list(chunk))
            conn.execute(delete(t.outcomes).where(t.outcomes.c.prediction_id.in_(list(chunk))))

    # --- maintenance ------------------------------------------------------------------------------
    def _claim(self, q: Any) -> Any:
        """On PostgreSQL, lock the selected join rows and skip rows another transaction holds, so concurrent
        maintenance passes and consumers never move the same prediction's counts twice."""
        return q.with_for_update(skip_locked=True) if self.dialect == "postgresql" else q

    def unlabelled_before(self, conn: Connection, cutoff: float, shards: Sequence[int] | None,
                          limit: int = 50_000) -> list[PredRecord]:
        """Unlabelled predictions made before cutoff (for the implicit-negative policy): no label of their own and
        no outcome row for their id."""
        p = t.predictions.c
        q = select(t.predictions).where(and_(p.label.is_(None), p.ts < cutoff, ~_has_outcome(p))).limit(limit)
        if shards is not None:
            q = q.where(p.shard.in_(list(shards)))
        return [bulk.pred_record(r) for r in conn.execute(self._claim(q))]

    def before(self, conn: Connection, cutoff: float, shards: Sequence[int] | None,
               limit: int = 50_000) -> tuple[list[PredRecord], list[OutcomeRecord]]:
        """Join state older than cutoff (past the label horizon)."""
        p, o = t.predictions.c, t.outcomes.c
        own = o.prediction_id == p.prediction_id  # the outcome's label and time as columns: the rows' plan unchanged
        qp = select(t.predictions, select(o.label).where(own).scalar_subquery().label("o_label"),
                    select(o.ts).where(own).scalar_subquery().label("o_ts")).where(p.ts < cutoff).limit(limit)
        qo = select(t.outcomes).where(o.ts < cutoff).limit(limit)
        if shards is not None:
            qp, qo = qp.where(p.shard.in_(list(shards))), qo.where(o.shard.in_(list(shards)))
        preds = [_in_force(r) for r in conn.execute(self._claim(qp))]
        outs = [OutcomeRecord(pid, label, ts, shard, bool(matched))  # by position: the outcomes table's order
                for pid, label, ts, shard, matched in conn.execute(self._claim(qo))]
        return preds, outs

    # --- sizes and analysis reads -----------------------------------------------------------------
    @staticmethod
    def size(conn: Connection) -> int:
        """Predictions held (waiting for, or keeping, their label until the horizon)."""
        return int(conn.execute(select(func.count()).select_from(t.predictions)).scalar_one())

    @staticmethod
    def pending_outcomes(conn: Connection) -> int:
        """Outcomes still waiting for their prediction."""
        q = select(func.count()).select_from(t.outcomes).where(t.outcomes.c.matched.is_(False))
        return int(conn.execute(q).scalar_one())

    @staticmethod
    def labelled_scores(conn: Connection, model: str | None, start: float, end: float, shards: Sequence[int],
                        variant: str | None, model_version: str | None, limit: int
                        ) -> tuple[np.ndarray, np.ndarray] | None:
        """Scores and labels (label in force) of the held labelled predictions made in [start, end) on `shards`
        (the index is by shard and time); None when there are more than `limit` of them."""
        p, o = t.predictions.c, t.outcomes.c
        label = func.coalesce(o.label, p.label)
        q = t.for_series(select(p.score, label).select_from(_with_outcomes(t.predictions)).where(
            and_(p.shard.in_(list(shards)), p.ts >= start, p.ts < end, label.is_not(None))), p, model, variant,
            model_version)
        # the driver's own tuples: SQLAlchemy's Row objects cost ~0.6 µs a row here (a 7-day window holds 10^5)
        rows = conn.execute(q.limit(limit + 1)).cursor.fetchall()
        if len(rows) > limit:
            return None
        pairs = np.array(rows, dtype=np.float64).reshape(-1, 2)
        return pairs[:, 0].copy(), pairs[:, 1].astype(np.int64)

    @staticmethod
    def positive_delays(conn: Connection, model: str | None, start: float, end: float, shards: Sequence[int],
                        variant: str | None, limit: int) -> np.ndarray | None:
        """Label delays (label_ts − ts, seconds) of the held positives made in [start, end) on `shards`; None when
        there are more than `limit` of them."""
        p, o = t.predictions.c, t.outcomes.c
        label_ts = func.coalesce(o.ts, p.label_ts)
        q = t.for_series(select(label_ts - p.ts).select_from(_with_outcomes(t.predictions)).where(
            and_(p.shard.in_(list(shards)), p.ts >= start, p.ts < end, func.coalesce(o.label, p.label) == 1,
                 label_ts.is_not(None))), p, model, variant)
        rows = conn.execute(q.limit(limit + 1)).cursor.fetchall()
        if len(rows) > limit:
            return None
        return np.array([r[0] for r in rows], dtype=np.float64)

    @staticmethod
    def shadow_cells(conn: Connection, model: str | None, start: float, end: float, control: str,
                     treatment: str) -> ShadowCells:
        """Control and treatment predictions made in [start, end) joined by (prediction_id, model) and counted by
        (control's label, flagged by control, flagged by treatment) in the database (GROUP BY), and the
        predictions of each variant in the window."""
        p = t.predictions
        c, tr = p.alias("c"), p.alias("t")
        o = t.outcomes
        cond = [c.c.variant == control, tr.c.variant == treatment, c.c.ts >= start, c.c.ts < end]
        if model is not None:
            cond.append(c.c.model == model)
        label = func.coalesce(o.c.label, c.c.label)  # control's label in force
        q = (select(label, c.c.flagged, tr.c.flagged.label("t_flagged"), func.count().label("n"))
             .select_from(c.join(tr, and_(c.c.prediction_id == tr.c.prediction_id, c.c.model == tr.c.model))
                          .outerjoin(o, o.c.prediction_id == c.c.prediction_id))
             .where(and_(*cond)).group_by(label, c.c.flagged, tr.c.flagged))
        rows_q = select(p.c.variant, func.count()).where(
            and_(p.c.variant.in_([control, treatment]), p.c.ts >= start, p.c.ts < end,
                 *([p.c.model == model] if model is not None else []))).group_by(p.c.variant)
        cells = [(label, bool(fc), bool(ft), int(n)) for label, fc, ft, n in conn.execute(q)]
        return cells, {v: int(n) for v, n in conn.execute(rows_q)}


def _has_outcome(p: Any) -> Any:
    """An outcome row is held for the prediction row's id (its label in force then is the outcome's)."""
    o = t.outcomes.c
    return exists().where(o.prediction_id == p.prediction_id)


def _with_outcomes(predictions: Any) -> Any:
    """Prediction rows with the outcome row of their id, if any (the label in force: see the module docstring)."""
    return predictions.outerjoin(t.outcomes, t.outcomes.c.prediction_id == predictions.c.prediction_id)


def _in_force(r: Any) -> PredRecord:
    """The record of a prediction row read with its outcome's o_label and o_ts (correlated subqueries in the select
    list: a join in the rows' read changed its plan on SQLite, a scan of the (shard, ts) index instead of the table,
    and with it which rows a limited read returns, so what maintenance passes matured or expired)."""
    rec = bulk.pred_record(r)
    o_label, o_ts = r[12], r[13]  # after the twelve prediction columns
    if o_label is not None:
        label_in_force(rec, OutcomeRecord(rec.prediction_id, o_label, o_ts))
    return rec


def fold_outcomes(conn: Connection, ids: list[str]) -> None:
    """Write the outcome rows of these ids into the label columns of their predictions' rows, before the outcomes
    are deleted (expiry at their own ts: a prediction made after its outcome, clock skew, stays longer), so the
    label in force is kept; rows that hold it already are left as they are."""
    if conn.dialect.name == "sqlite":  # one driver-level executemany (a statement per 500 ids cost ~1 ms each)
        conn.exec_driver_sql(SQLITE_FOLD_OUTCOME, [(i,) for i in ids])
        return
    p, o = t.predictions.c, t.outcomes.c
    own = o.prediction_id == p.prediction_id

    def of_outcome(col: Any) -> Any:
        return select(col).where(own).scalar_subquery()

    differs = or_(p.label.is_distinct_from(o.label), p.label_ts.is_distinct_from(o.ts), p.implicit)
    conn.execute(update(t.predictions).where(and_(p.prediction_id.in_(ids), exists().where(and_(own, differs))))
                 .values(label=of_outcome(o.label), label_ts=of_outcome(o.ts), implicit=False))
