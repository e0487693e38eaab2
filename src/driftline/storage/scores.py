"""The labelled (score, label) pairs of a window, read from the join state (`predictions` rows are held until
the label horizon), for exact ROC AUC and average precision (readouts.ranking), and the label delays of its
positives alone, for the A/B readout's days to power (readouts.ab)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..core.grids import N_DELAY_BINS, delay_bin
from .store import Store


def labelled_scores(store: Store, model: str | None, start: float, end: float, shards: Sequence[int],
                    variant: str | None = None, model_version: str | None = None, limit: int = 250_000
                    ) -> tuple[np.ndarray, np.ndarray] | None:
    """Scores and labels (label in force) of the held labelled predictions made in [start, end) on `shards`
    (the index is by shard and time); None when there are more than `limit` of them."""
    with store.read() as conn:
        return store.join.labelled_scores(conn, model, start, end, shards, variant, model_version, limit)


def positive_delay_hist(store: Store, model: str | None, start: float, end: float, variant: str | None,
                        positives: int, limit: int = 250_000) -> np.ndarray | None:
    """The label-delay histogram (grids.DELAY_EDGES) of the positives of one variant made in [start, end), from the
    join state: buckets keep one delay histogram for every label class, and a class whose outcomes come later than
    the other's (churn: positives 30–60 d, negatives confirmed at 30 d) cannot be told from it. None unless all
    `positives` (the buckets' labelled positives) are still held (some expired past the label horizon) and at most
    `limit`. A delay below 0 (an outcome stamped before its prediction) is left out, as the buckets leave it out."""
    shards = store.join_shards()
    with store.read() as conn:
        delays = store.join.positive_delays(conn, model, start, end, shards, variant, limit)
    if delays is None or len(delays) != positives or positives == 0:
        return None
    delays = delays[delays >= 0]
    return np.bincount(delay_bin(delays), minlength=N_DELAY_BINS).astype(np.int64)
