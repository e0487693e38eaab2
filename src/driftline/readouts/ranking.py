"""ROC AUC and average precision of a window: from the histograms when their bound is tight enough, otherwise
exact from the held (score, label) pairs of the join state, so `metrics`, triggers and the exporter agree."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..analysis.classification import Metrics, classification
from ..analysis.ranking import Ranking, exact_ranking, histogram_ranking, ranking_hists
from ..core.stats import NEG, POS, BucketStats
from ..storage.compaction import COMPACTED_SHARD
from ..storage.scores import bucket_shards, labelled_scores
from ..storage.bucket_row import BucketRow
from ..storage.store import Store
from .windows import Window

TOLERANCE = 5e-4
"""Largest histogram bound accepted without trying the exact path."""
EXACT_MAX_LABELLED = 250_000
"""Windows with more labelled predictions keep the O(buckets) histogram result (with its bound)."""


def window_ranking(store: Store, model: str | None, window: Window, rows: Sequence[BucketRow], stats: BucketStats,
                   variant: str | None = None, model_version: str | None = None) -> Ranking:
    """The histogram result when its bound is ≤ TOLERANCE; else the exact one when every labelled prediction of
    the window is still held (same labelled and positive counts as the buckets) and there are
    at most EXACT_MAX_LABELLED; else the histogram result with its bound."""
    hist = histogram_ranking(*ranking_hists(stats))
    labelled = int(stats.conf[POS].sum() + stats.conf[NEG].sum())
    if hist.bound <= TOLERANCE or labelled > EXACT_MAX_LABELLED or not rows:
        return hist
    pairs = held_pairs(store, model, window, rows, stats, variant, model_version)
    return hist if pairs is None else exact_ranking(*pairs)


def held_pairs(store: Store, model: str | None, window: Window, rows: Sequence[BucketRow], stats: BucketStats,
               variant: str | None = None, model_version: str | None = None, limit: int = EXACT_MAX_LABELLED
               ) -> tuple[np.ndarray, np.ndarray] | None:
    """(scores, labels) of every labelled prediction of the window from the join state, when all of them are still
    held (same labelled and positive counts as `stats`) and at most `limit`; else None."""
    labelled = int(stats.conf[POS].sum() + stats.conf[NEG].sum())
    if labelled > limit or not rows:
        return None
    shards = sorted({r.shard for r in rows})
    if COMPACTED_SHARD in shards:  # a compacted day does not say its shards; its join rows are usually expired
        shards = sorted(set(shards) - {COMPACTED_SHARD} | set(bucket_shards(store, model)))
    pairs = labelled_scores(store, model, window.start, window.end, shards, variant, model_version, limit)
    if pairs is None:
        return None
    scores, labels = pairs
    if len(labels) != labelled or int(labels.sum()) != int(stats.conf[POS].sum()):
        return None  # some rows expired (or a batch landed between the two reads): not every prediction is held
    return scores, labels


def window_metrics(store: Store, model: str | None, window: Window, rows: Sequence[BucketRow], stats: BucketStats,
                   variant: str | None = None, model_version: str | None = None) -> Metrics:
    """`classification` of a window's merged statistics with its ranking metrics from `window_ranking`."""
    return classification(stats, window_ranking(store, model, window, rows, stats, variant, model_version))
