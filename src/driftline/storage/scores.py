"""The labelled (score, label) pairs of a window, read from the join state (`predictions` rows are held until
the label horizon), for exact ROC AUC and average precision (readouts.ranking)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sqlalchemy import and_, select

from . import schema as t
from .store import Store


def labelled_scores(store: Store, model: str | None, start: float, end: float, shards: Sequence[int],
                    variant: str | None = None, model_version: str | None = None, limit: int = 250_000
                    ) -> tuple[np.ndarray, np.ndarray] | None:
    """Scores and labels (label in force) of the held labelled predictions made in [start, end) on `shards`
    (the index is by shard and time); None when there are more than `limit` of them."""
    p = t.predictions.c
    q = select(p.score, p.label).where(and_(p.shard.in_(list(shards)), p.ts >= start, p.ts < end,
                                            p.label.is_not(None)))
    if model is not None:
        q = q.where(p.model == model)
    if variant is not None:
        q = q.where(p.variant == variant)
    if model_version is not None:
        q = q.where(p.model_version == model_version)
    with store.read() as conn:
        # the driver's own tuples: SQLAlchemy's Row objects cost ~0.6 µs a row here (a 7-day window holds 10^5)
        rows = conn.execute(q.limit(limit + 1)).cursor.fetchall()
    if len(rows) > limit:
        return None
    pairs = np.array(rows, dtype=np.float64).reshape(-1, 2)
    return pairs[:, 0].copy(), pairs[:, 1].astype(np.int64)


def bucket_shards(store: Store, model: str | None) -> list[int]:
    """Every ingestion shard (partition) with stored hourly buckets of the model: where the join rows behind
    compacted days may still be held."""
    b = t.buckets.c
    q = select(b.shard).where(b.shard >= 0).distinct()
    if model is not None:
        q = q.where(b.model == model)
    with store.read() as conn:
        return sorted(int(r[0]) for r in conn.execute(q))

