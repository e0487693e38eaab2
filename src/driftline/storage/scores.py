"""The labelled (score, label) pairs of a window, read from the join state (`predictions` rows are held until
the label horizon), for exact ROC AUC and average precision (readouts.ranking)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sqlalchemy import select

from . import schema as t
from .store import Store


def labelled_scores(store: Store, model: str | None, start: float, end: float, shards: Sequence[int],
                    variant: str | None = None, model_version: str | None = None, limit: int = 250_000
                    ) -> tuple[np.ndarray, np.ndarray] | None:
    """Scores and labels (label in force) of the held labelled predictions made in [start, end) on `shards`
    (the index is by shard and time); None when there are more than `limit` of them."""
    with store.read() as conn:
        return store.join.labelled_scores(conn, model, start, end, shards, variant, model_version, limit)


def bucket_shards(store: Store, model: str | None) -> list[int]:
    """Every ingestion shard (partition) with stored hourly buckets of the model: where the join rows behind
    compacted days may still be held."""
    b = t.buckets.c
    q = select(b.shard).where(b.shard >= 0).distinct()
    if model is not None:
        q = q.where(b.model == model)
    with store.read() as conn:
        return sorted(int(r[0]) for r in conn.execute(q))

