"""The threshold(s) a window's predictions were flagged at: recorded at ingest (core.flag_range: each bucket's
lowest and highest), or, for a window holding a bucket written before thresholds were recorded (an older version),
inferred from its buckets' counts and histograms as below; the inference is kept for those buckets only.

An event's own `threshold` overrides the config's, and older buckets keep no thresholds: only each label state's
flagged count (conf[:, 1]) and its fine score histogram. A cut explains a bucket when, in every label state, the
predictions in the fine bins at or above it are exactly the flagged ones; the cuts that do form one run of fine
edges (the tails are monotone). A window flagged at one threshold has a cut common to all its buckets; one whose
threshold changed (a new deployment, or events carrying different ones) needs several: the fewest that explain
every bucket are found by the greedy interval stabbing below. A bucket that no single cut explains had thresholds
that varied inside it, and the set is then unknown.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ..core.flag_range import FROM_CONFIG, FROM_EVENTS, FlagRange
from ..core.grids import SCORE_EDGES
from ..core.stats import BucketStats


@dataclass(frozen=True, slots=True)
class FlagThresholds:
    """The threshold in force over a window: one value, or mixed (the set when the buckets tell it)."""

    configured: float
    thresholds: tuple[float, ...] | None
    """Inferred: the fewest cuts that explain every bucket's flags, ascending; None when some bucket is explained by
    none. Recorded: every bucket's lowest and highest threshold, ascending (those between unknown)."""
    sources: int | None = None
    """Recorded: FROM_CONFIG | FROM_EVENTS bits (predictions flagged at the config's threshold of their ingest, at
    their event's own); None when inferred."""

    @property
    def mixed(self) -> bool:
        return self.thresholds is None or len(self.thresholds) > 1

    @property
    def value(self) -> float | None:
        """The single threshold the flags were made at; None when mixed."""
        return self.thresholds[0] if self.thresholds is not None and len(self.thresholds) == 1 else None

    @property
    def source(self) -> str:
        """'config' when every flag was made at the configured threshold, 'events' for one other, else 'mixed'."""
        if self.mixed:
            return "mixed"
        return "config" if self.value == self.configured else "events"

    @property
    def basis(self) -> str:
        """'recorded' (at ingest, exact) or 'inferred' (from score histograms: a bucket of an older version)."""
        return "inferred" if self.sources is None else "recorded"

    def to_json(self) -> dict[str, object]:
        src = self.sources
        return {"value": self.value, "mixed": self.mixed, "source": self.source,
                "thresholds": None if self.thresholds is None else list(self.thresholds),
                "range": None if not self.thresholds else [self.thresholds[0], self.thresholds[-1]],
                "configured": self.configured, "basis": self.basis,
                "from_config": None if src is None else bool(src & FROM_CONFIG),
                "from_events": None if src is None else bool(src & FROM_EVENTS)}


def flag_note(doc: dict[str, object] | None) -> str | None:
    """The sentence a reader needs when the flags were not made at the config's threshold (from to_json); None
    when they were."""
    if not doc or doc.get("source") == "config":
        return None
    cfg = f"{doc['configured']:g}"
    how = "" if doc.get("basis") == "recorded" else " (inferred from score histograms: buckets of an older version)"
    if doc.get("value") is not None:
        if doc.get("from_events") is False:  # the config's threshold when they were ingested, since changed
            return f"flagged at score ≥ {doc['value']:g}: the config's threshold when ingested, not today's {cfg}"
        return f"flagged at score ≥ {doc['value']:g}: the events' own threshold, not the config's {cfg}{how}"
    seen = doc.get("thresholds")
    if seen and doc.get("basis") == "recorded":
        lo, hi = doc["range"]  # type: ignore[misc]
        return f"flagged at mixed thresholds (from {lo:g} to {hi:g}; config {cfg}): the events carried their own"
    if seen:
        listed = ", ".join(f"{t:g}" for t in seen)  # type: ignore[union-attr]
        return f"flagged at mixed thresholds ({listed}; config {cfg}): the events carried their own{how}"
    return f"flagged at mixed thresholds (they varied within an hour; config {cfg}): the events carried their own"


def _cut_span(conf: np.ndarray, hist: np.ndarray) -> tuple[float, float] | None:
    """The scores [low, high] a single cut can lie in to reproduce every label state's flagged count (fine bins
    a, …, b with tail[i + 1] ≤ flagged ≤ tail[i]: [edge a, edge b + 1]); None when no single cut can."""
    tails = np.concatenate((np.cumsum(hist[:, ::-1], axis=1)[:, ::-1],
                            np.zeros((hist.shape[0], 1), dtype=np.int64)), axis=1)
    flagged = conf[:, 1:2]
    ok = np.all((tails[:, 1:] <= flagged) & (flagged <= tails[:, :-1]), axis=0)
    hits = np.flatnonzero(ok)
    return None if len(hits) == 0 else (float(SCORE_EDGES[hits[0]]), float(SCORE_EDGES[hits[-1] + 1]))


def _shortest(low: float, high: float, configured: float) -> float:
    """The configured threshold if it lies in [low, high], else the number there with the fewest decimals."""
    if low <= configured <= high:
        return configured
    for d in range(1, 17):
        x = math.ceil(round(low * 10 ** d, 6)) / 10 ** d
        if x <= high:
            return x
    return low


def flag_thresholds(buckets: Iterable[BucketStats | tuple[np.ndarray, np.ndarray]], configured: float
                    ) -> FlagThresholds:
    """The threshold(s) the buckets' predictions were flagged at (empty buckets say nothing: the configured one);
    a bucket is its BucketStats or its (conf, hist) arrays (core.window_sum.flag_counts)."""
    spans = []
    for b in buckets:
        conf, hist = (b.conf, b.hist) if isinstance(b, BucketStats) else b
        if not conf.any():
            continue
        span = _cut_span(conf, hist)
        if span is None:
            return FlagThresholds(configured, None)
        spans.append(span)
    if all(lo <= configured <= hi for lo, hi in spans):
        return FlagThresholds(configured, (configured,))
    picked: list[float] = []
    group: tuple[float, float] | None = None
    for lo, hi in sorted(spans, key=lambda r: (r[1], r[0])):  # greedy stabbing: fewest cuts explaining every span
        if group is not None and lo <= group[1]:
            group = (max(group[0], lo), group[1])
            continue
        if group is not None:
            picked.append(_shortest(*group, configured))
        group = (lo, hi)
    assert group is not None
    picked.append(_shortest(*group, configured))
    return FlagThresholds(configured, tuple(sorted(set(picked))))


def recorded_thresholds(ranges: Iterable[tuple[FlagRange | None, int]], configured: float) -> FlagThresholds | None:
    """The threshold(s) in force from the buckets' recorded ranges, given as (flag range, predictions) per bucket;
    None when a bucket holding predictions has none (written by an older version): the caller infers then."""
    seen: set[float] = set()
    sources = 0
    for rng, predictions in ranges:
        if predictions == 0:
            continue
        if rng is None or rng[2] == 0:
            return None
        seen.update(rng[:2])
        sources |= rng[2]
    return FlagThresholds(configured, tuple(sorted(seen)) if seen else (configured,), sources)


def with_recorded(inferred: FlagThresholds, recorded: FlagThresholds | None) -> FlagThresholds:
    """The thresholds of a window holding older buckets (inferred) and recorded ones: each bucket read its own way,
    so a recorded bucket's range is never re-read from its histograms; the basis stays 'inferred'."""
    if inferred.thresholds is None or recorded is None or not recorded.sources or recorded.thresholds is None:
        return inferred
    return FlagThresholds(inferred.configured, tuple(sorted(set(inferred.thresholds) | set(recorded.thresholds))))
