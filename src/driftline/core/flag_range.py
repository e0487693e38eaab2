"""The thresholds a bucket's predictions were flagged at, recorded at ingest: the lowest and highest, and whether
they came from the config (an event without its own `threshold`) or from the events.

A prediction's threshold is recorded once, when the prediction is first counted in its bucket; label moves
(outcomes, corrections, implicit negatives) and expiry leave it in its bucket and record nothing, so a bucket's
range is a min and a max over the set of its counted predictions: the same in any arrival order, and buckets
merge by min of lows, max of highs, or of sources. Stored in the encoded bucket as "tr": [low, high, sources,
predictions counted when written]; a writer that knows no "tr" (an older version) keeps it as it was while adding
predictions, so a stored count that is no longer the bucket's makes the range unknown (None), as a bucket stored
before ranges existed is when it holds predictions: readouts then infer it (analysis/flag_thresholds.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

FlagRange = tuple[float, float, int]
"""(lowest threshold, highest threshold, sources: FROM_CONFIG | FROM_EVENTS bits)."""
FROM_CONFIG, FROM_EVENTS = 1, 2
"""Source bits: some prediction was flagged at the config's threshold / at its event's own."""
EMPTY: FlagRange = (math.inf, -math.inf, 0)
"""The range of a bucket without predictions (the identity of range_sum)."""
KEY = "tr"


def range_sum(parts: Sequence[FlagRange | None]) -> FlagRange | None:
    """The range of merged buckets: min of lows, max of highs, sources or-ed; None when any part is unknown."""
    lo, hi, src = EMPTY
    for p in parts:
        if p is None:
            return None
        lo, hi, src = min(lo, p[0]), max(hi, p[1]), src | p[2]
    return lo, hi, src


def batch_ranges(n_buckets: int, bucket: np.ndarray, threshold: np.ndarray, own: np.ndarray) -> list[FlagRange]:
    """Each bucket's range from a batch's counted predictions (bucket index, threshold used, whether it was the
    event's own), in three numpy reductions over the batch."""
    if not len(bucket):
        return [EMPTY] * n_buckets
    lo = np.full(n_buckets, np.inf)
    hi = np.full(n_buckets, -np.inf)
    src = np.zeros(n_buckets, dtype=np.int64)
    np.minimum.at(lo, bucket, threshold)
    np.maximum.at(hi, bucket, threshold)
    np.bitwise_or.at(src, bucket, np.where(own, FROM_EVENTS, FROM_CONFIG))
    return list(zip(lo.tolist(), hi.tolist(), src.tolist()))


def range_into_doc(doc: dict[str, Any], rng: FlagRange | None, predictions: int) -> None:
    """Set a bucket document's "tr" (with the `predictions` it covers); none when unknown or the bucket has no
    predictions (so a bucket without them encodes as before)."""
    if rng is None or rng[2] == 0:
        doc.pop(KEY, None)
        return
    doc[KEY] = [float(rng[0]), float(rng[1]), int(rng[2]), int(predictions)]


def range_from_doc(doc: dict[str, Any], predictions: int) -> FlagRange | None:
    """A stored bucket's range: EMPTY when it has none and no predictions, None (unknown) when it has none but
    holds predictions (an older bucket), is malformed, or was written for another prediction count (an older
    writer added predictions since)."""
    return range_from_raw(doc.get(KEY), predictions)


def range_from_raw(raw: Any, predictions: int) -> FlagRange | None:
    """range_from_doc of the document's stored "tr" value as it is (None: absent)."""
    if raw is None:
        return EMPTY if predictions == 0 else None
    if type(raw) is not list or len(raw) != 4:
        return None
    lo, hi, src, n = raw
    if (type(lo) is not float or type(hi) is not float or type(src) is not int or type(n) is not int
            or n != predictions or not 0 < src <= FROM_CONFIG | FROM_EVENTS or not lo <= hi):
        return None
    return lo, hi, src
