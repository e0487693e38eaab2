"""The labelled (score, label) pairs of a window, read from the join state (`predictions` rows are held until
the label horizon), for exact ROC AUC and average precision (readouts.ranking), and the label delays of its
positives alone, for the A/B readout's days to power (readouts.ab)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sqlalchemy import select

from ..core.grids import N_DELAY_BINS, delay_bin
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



def positive_delay_hist(store: Store, model: str | None, start: float, end: float, variant: str | None,
                        positives: int, limit: int = 250_000) -> np.ndarray | None:
    """The label-delay histogram (grids.DELAY_EDGES) of the positives of one variant made in [start, end), from the
    join state: buckets keep one delay histogram for every label class, and a class whose outcomes come later than
    the other's (churn: positives 30–60 d, negatives confirmed at 30 d) cannot be told from it. None unless all
    `positives` (the buckets' labelled positives) are still held (some expired past the label horizon) and at most
    `limit`. A delay below 0 (an outcome stamped before its prediction) is left out, as the buckets leave it out."""
    with store.read() as conn:
        delays = store.join.positive_delays(conn, model, start, end, bucket_shards(store, model), variant, limit)
    if delays is None or len(delays) != positives or positives == 0:
        return None
    delays = delays[delays >= 0]
    return np.bincount(delay_bin(delays), minlength=N_DELAY_BINS).astype(np.int64)
