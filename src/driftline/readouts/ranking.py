"""ROC AUC and average precision of a window: from the histograms when their bound is tight enough, otherwise
exact from the held (score, label) pairs of the join state, so `metrics`, triggers and the exporter agree."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..analysis.classification import Metrics, classification
from ..analysis.matured import MaturedPart, with_matured
from ..analysis.ranking import UNRANKED, Ranking, exact_ranking, histogram_ranking, ranking_hists
from ..analysis.classification import counts
from ..core.events import iso
from ..core.stats import NEG, POS, BucketStats
from ..storage.scores import labelled_scores
from ..storage.bucket_row import BucketRow
from ..storage.store import Store
from .matured_part import Maturing
from .windows import Window, merged

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
    pairs = labelled_scores(store, model, window.start, window.end, store.join_shards(), variant, model_version, limit)
    if pairs is None:
        return None
    scores, labels = pairs
    if len(labels) != labelled or int(labels.sum()) != int(stats.conf[POS].sum()):
        return None  # some rows expired (or a batch landed between the two reads): not every prediction is held
    return scores, labels


def window_metrics(store: Store, model: str | None, window: Window, rows: Sequence[BucketRow], stats: BucketStats,
                   variant: str | None = None, model_version: str | None = None,
                   maturing: Maturing | None = None) -> Metrics:
    """`classification` of a window's merged statistics with its ranking metrics from `window_ranking`. With
    `maturing` (implicit-negative policy) and a window reaching past its boundary, the metrics that read labelled
    negatives come from the window's matured buckets alone (analysis.matured: the young part's early outcomes
    come without its negatives, and precision over the whole window read 0.80 where 0.62 is right)."""
    if maturing is None or window.end <= maturing.before:
        return classification(stats, window_ranking(store, model, window, rows, stats, variant, model_version))
    old = maturing.rows(rows)
    old_stats = merged(old)
    part = Window(window.start, max(window.start, maturing.before))
    matured = classification(old_stats, window_ranking(store, model, part, old, old_stats, variant, model_version))
    return with_matured(classification(stats, UNRANKED), matured, matured_part(maturing, stats, old_stats))


def split_metrics(rows: Sequence[BucketRow], stats: BucketStats, maturing: Maturing | None) -> Metrics:
    """As window_metrics with the ranking from the histograms (no store read): per-variant summaries."""
    if maturing is None or not rows or max(r.bucket_start for r in rows) + maturing.bucket_s <= maturing.before:
        return classification(stats, UNRANKED)
    old_stats = merged(maturing.rows(rows))
    return with_matured(classification(stats, UNRANKED), classification(old_stats, UNRANKED),
                        matured_part(maturing, stats, old_stats))


def matured_part(maturing: Maturing, whole: BucketStats, old: BucketStats) -> MaturedPart:
    """What the matured part holds and what the younger predictions leave out."""
    c, m = counts(whole), counts(old)
    return MaturedPart(iso(maturing.before), maturing.implicit_after_s, m, c.predictions - m.predictions,
                       c.unlabelled - m.unlabelled)
