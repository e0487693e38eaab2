"""The A/B readout's label pipelines (analysis.label_pipeline): each arm's stored predictions in the window, waiting
for their labels, and the label-delay distribution they wait by, estimated over a delay sample that reaches past
the window: the arm's buckets over the label horizon ending at the newest stored event (`delay_span`).

Estimated from the window alone, a window shorter than the label delays could not show the long delays (no
prediction in it was old enough): churn tryout, labels 2–21 days after the prediction, a 14-day window read F(14 d)
= 0.977 where 0.63 is true, and 690 positives still to come in arm A where ~1,607 were. The horizon is as far back
as the join state holds each prediction's label (the positives' own delays) and as late as a label is still joined.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..analysis.label_pipeline import LabelPipeline, label_pipeline
from ..core.grids import DELAY_EDGES
from ..core.stats import BucketStats
from ..numbers import count, duration
from ..storage.bucket_row import BucketRow
from ..storage.compaction import COMPACTED_SHARD, DAY_S
from .windows import Window, merged


def delay_span(window: Window, labels_as_of: float | None, horizon_s: float, bucket_s: int) -> Window | None:
    """The span of the delay sample: the label horizon ending with the bucket holding the newest stored event
    (whole buckets, the first one starting at or after newest − horizon, so the join state still holds every
    prediction of it), never ending before the window; None before any event."""
    if labels_as_of is None:
        return None
    end = max(window.end, math.floor(labels_as_of / bucket_s) * bucket_s + bucket_s)
    return Window(float(math.ceil((labels_as_of - horizon_s) / bucket_s) * bucket_s), float(end))


def seen_age(sample: list[BucketRow], span: Window, labels_as_of: float, bucket_s: int) -> float | None:
    """The age of the sample's oldest prediction (its bucket's start) when the sample is younger than its span
    (the store or the arm is younger than the label horizon): no longer delay can have been seen; None otherwise."""
    if not sample:
        return None
    first = min(r.bucket_start for r in sample)
    return None if first <= span.start + bucket_s else max(labels_as_of - first, 0.0)


def _ages(rows: list[BucketRow], as_of: float, bucket_s: int) -> tuple[np.ndarray, np.ndarray]:
    """Each bucket's age at `as_of` (its middle; a compacted day is a day wide) and its predictions, counted from
    its flag record (kept by the window sum that merged the rows, else read from the bytes): decoding the delay
    span's buckets for their counts held them all decoded (+156 MB of RSS for `ab --window 7d` on 28 days of
    20,000 predictions a day, verify tryout)."""
    width = np.array([DAY_S if r.shard == COMPACTED_SHARD else bucket_s for r in rows], dtype=np.float64)
    starts = np.array([r.bucket_start for r in rows], dtype=np.float64)
    counts = np.array([r.flag_record()[1] for r in rows], dtype=np.float64)
    return np.maximum(as_of - (starts + width / 2.0), 0.0), counts


def arm_pipeline(rows: list[BucketRow], labelled_positives: int, stats: BucketStats, window: Window, bucket_s: int,
                 days: float, positive_delays: np.ndarray | None = None, labels_as_of: float | None = None,
                 sample: list[BucketRow] | None = None, seen_s: float | None = None) -> LabelPipeline | None:
    """The arm's label pipeline from its stored buckets in the window: each bucket's age (its middle; a compacted
    day is a day wide) at the time its labels are known, `labels_as_of` (the newest stored event: a window ending
    before it, `--at`, holds the labels known now; at most the window's end otherwise), and predictions, and its
    predictions a day; the label delays are those of the delay `sample` (the arm's buckets over `delay_span`; by
    default the window's rows): its positives' histogram (`positive_delays`, from the join state) or, when not
    known, its buckets' histogram of all labels, weighted by the sample's buckets' ages (`seen_s`: seen_age).
    None without rows or without a stored label delay. Ages counted to the window's end made a past window's
    labels that came after it look early: the yield read far above one positive a prediction (churn tryout:
    ~9,781 positives still to come for 423 unlabelled predictions)."""
    if not rows or days <= 0:
        return None
    as_of = window.end if labels_as_of is None else max(window.end, labels_as_of)
    ages, counts = _ages(rows, as_of, bucket_s)
    sample = rows if not sample else sample
    s_ages, s_counts = _ages(sample, as_of, bucket_s)
    if positive_delays is not None:
        hist, source = positive_delays, "positives"
    else:
        hist, source = (stats.delay if sample is rows else merged(sample).delay), "all_labels"
    return label_pipeline(labelled_positives, hist, DELAY_EDGES, ages, counts, stats.predictions / days, source,
                          s_ages, s_counts, seen_s)


def delay_basis(pc: LabelPipeline, pt: LabelPipeline, control: str, treatment: str) -> dict[str, Any]:
    """What the days of the power estimate assume (JSON `power.label_delay`): each arm's labelled positives a day
    of traffic brings once labelled, those its stored predictions will still bring without more traffic, the
    longest label delay stored, and `delays_cut_at_s`, the age past which an arm's data cannot show a delay when
    labels still came close to it, with a warning for it (`warnings`)."""
    arms = ((control, pc), (treatment, pt))
    warnings = [f"{a}: labels still came {duration(p.longest_s)} after the prediction, and its oldest prediction "
                f"within the label horizon is {duration(p.cut_s)} old: longer delays cannot be seen yet and count as "
                f"none, so its positives still to come (~{count(round(p.pending()))}) may read low and the days to power "
                f"be wrong until the data is older than its label delays" for a, p in arms if p.cut_s is not None]
    return {"positives_per_day": {a: p.positives_per_day for a, p in arms},
            "pending_positives": {a: p.pending() for a, p in arms},
            "delay_source": {a: p.delay_source for a, p in arms},
            "longest_delay_s": {a: p.longest_s for a, p in arms},
            "delays_cut_at_s": {a: p.cut_s for a, p in arms},
            "warnings": warnings,
            "assumes": ("traffic continues at the window's rate and labels keep arriving after the delays stored "
                        "for each arm (its positives' label delays over the label horizon ending at the newest "
                        "event; `all_labels`: every class's, the positives' own being no longer held; corrected "
                        "for predictions too young to show the longer delays)")}
