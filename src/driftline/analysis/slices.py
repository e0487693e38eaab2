"""Metrics by slice (a configured feature's value): recall, FPR, precision and alert rate with Wilson
intervals, and the slices whose interval sits clearly on the wrong side of the targets.

A slice's shortfall is how far its 95 % interval lies beyond a target: target recall − the recall
interval's upper bound, or the FPR interval's lower bound − target FPR (the larger of the two). A
positive shortfall means even the favourable end of the interval misses the target, so small slices
with wide intervals are not ranked as worst on noise alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from ..core.stats import NEG, POS, UNL
from .rates import INDICATIVE_BELOW_N, Rate, rate


@dataclass(frozen=True, slots=True)
class SliceMetrics:
    """Confusion counts and rates of one slice value, with its shortfall against the targets."""

    feature: str
    value: str
    tp: int
    fp: int
    fn: int
    tn: int
    unlabelled: int
    recall: Rate
    fpr: Rate
    precision: Rate
    alert_rate: Rate
    shortfall: float | None
    shortfall_metric: str | None

    @property
    def predictions(self) -> int:
        return self.tp + self.fp + self.fn + self.tn + self.unlabelled

    @property
    def labelled(self) -> int:
        return self.tp + self.fp + self.fn + self.tn

    @property
    def indicative(self) -> bool:
        """Fewer than 30 labelled predictions: read every rate of the slice as indicative only."""
        return self.labelled < INDICATIVE_BELOW_N

    def to_json(self) -> dict[str, object]:
        return {"feature": self.feature, "value": self.value,
                "counts": {"predictions": self.predictions, "labelled": self.labelled, "tp": self.tp,
                           "fp": self.fp, "fn": self.fn, "tn": self.tn, "unlabelled": self.unlabelled},
                "recall": self.recall.to_json(), "fpr": self.fpr.to_json(), "precision": self.precision.to_json(),
                "alert_rate": self.alert_rate.to_json(), "indicative": self.indicative,
                "shortfall": self.shortfall, "shortfall_metric": self.shortfall_metric}


def slice_metrics(feature: str, value: str, conf: np.ndarray, target_recall: float | None = 0.7,
                  target_fpr: float | None = None, matured: np.ndarray | None = None) -> SliceMetrics:
    """Rates of one slice from its 3×2 conf array (rows NEG/POS/UNL, columns unflagged/flagged). `matured`: the
    slice's conf over the window's matured part (implicit-negative policy, readouts.matured_part), which FPR and
    precision are read over (its early positives come without their negatives); recall and alert rate, the
    counts: the whole window's."""
    c = np.asarray(conf, dtype=np.int64)
    tp, fn, fp, tn = int(c[POS, 1]), int(c[POS, 0]), int(c[NEG, 1]), int(c[NEG, 0])
    unl = int(c[UNL].sum())
    m = c if matured is None else np.asarray(matured, dtype=np.int64)
    m_tp, m_fp, m_tn = int(m[POS, 1]), int(m[NEG, 1]), int(m[NEG, 0])
    recall, fpr = rate(tp, tp + fn), rate(m_fp, m_fp + m_tn)
    gaps: list[tuple[float, str]] = []
    if target_recall is not None and recall.high is not None:
        gaps.append((target_recall - recall.high, "recall"))
    if target_fpr is not None and fpr.low is not None:
        gaps.append((fpr.low - target_fpr, "fpr"))
    gap, metric = max(gaps) if gaps else (None, None)
    return SliceMetrics(feature, value, tp, fp, fn, tn, unl, recall, fpr, rate(m_tp, m_tp + m_fp),
                        rate(int(c[:, 1].sum()), int(c.sum())), gap, metric)


def slices_of(per_feature: Mapping[str, Mapping[str, np.ndarray]], features: Iterable[str],
              target_recall: float | None = 0.7, target_fpr: float | None = None,
              matured: Mapping[str, Mapping[str, np.ndarray]] | None = None) -> dict[str, list[SliceMetrics]]:
    """Slice metrics for each requested feature, values worst first (`severity_key`, as the worst list);
    `matured`: per feature and value, the conf of the window's matured part (slice_metrics), when it differs."""
    out: dict[str, list[SliceMetrics]] = {}
    empty = np.zeros((3, 2), dtype=np.int64)
    for name in features:
        old = None if matured is None else matured.get(name, {})
        vals = [slice_metrics(name, v, c, target_recall, target_fpr, None if old is None else old.get(v, empty))
                for v, c in per_feature.get(name, {}).items()]
        out[name] = sorted(vals, key=severity_key)
    return out


def severity_key(s: SliceMetrics) -> tuple[bool, float, str, str]:
    """Sort key of slices, worst first: the largest shortfall first (a slice just inside the targets before one
    far inside), slices with no shortfall (no target, or no labels) last; ties by feature, then value name. One
    key for the per-feature tables and the worst list, so both read in the same order."""
    return (s.shortfall is None, -(s.shortfall if s.shortfall is not None else 0.0), s.feature, s.value)


def worst_slices(slices: Iterable[SliceMetrics]) -> list[SliceMetrics]:
    """Slices whose interval misses a target (shortfall > 0), the furthest first (`severity_key`)."""
    bad = [s for s in slices if s.shortfall is not None and s.shortfall > 0]
    return sorted(bad, key=severity_key)
