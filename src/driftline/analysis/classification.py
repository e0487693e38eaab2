"""Classifier metrics over a window (a merged BucketStats): rates with intervals, ranking, loss."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.grids import DELAY_EDGES, DELAY_MIDS
from ..core.stats import BucketStats
from .calibration import ReliabilityTable, brier_score, log_loss, reliability_table
from .ranking import Ranking, histogram_ranking, ranking_hists
from .rates import Rate, rate


@dataclass(frozen=True, slots=True)
class Counts:
    """Confusion counts at the deployed threshold plus unlabelled predictions."""

    predictions: int
    labelled: int
    positives: int
    negatives: int
    tp: int
    fp: int
    fn: int
    tn: int
    unlabelled_flagged: int
    unlabelled_unflagged: int
    expired: int
    implicit_negatives: int

    @property
    def unlabelled(self) -> int:
        return self.unlabelled_flagged + self.unlabelled_unflagged

    @property
    def flagged(self) -> int:
        return self.tp + self.fp + self.unlabelled_flagged

    def to_json(self) -> dict[str, int]:
        return {"predictions": self.predictions, "labelled": self.labelled, "positives": self.positives,
                "negatives": self.negatives, "tp": self.tp, "fp": self.fp, "fn": self.fn, "tn": self.tn,
                "unlabelled": self.unlabelled, "unlabelled_flagged": self.unlabelled_flagged,
                "unlabelled_unflagged": self.unlabelled_unflagged, "flagged": self.flagged,
                "expired": self.expired, "implicit_negatives": self.implicit_negatives}


def counts(stats: BucketStats) -> Counts:
    """Counts of a window."""
    tp, fn, fp, tn = stats.tp, stats.fn, stats.fp, stats.tn
    return Counts(stats.predictions, tp + fn + fp + tn, tp + fn, fp + tn, tp, fp, fn, tn,
                  stats.unlabelled_flagged, stats.unlabelled_unflagged, stats.expired, stats.implicit)


@dataclass(frozen=True, slots=True)
class Metrics:
    """Everything `driftline metrics` reports for one window."""

    counts: Counts
    rates: dict[str, Rate]
    label_coverage: Rate
    f1: float | None
    ranking: Ranking
    brier: float | None
    log_loss: float | None
    reliability: ReliabilityTable
    label_delay_s: dict[str, float | None]
    matured: Any = None
    """analysis.matured.MaturedPart when the negative-reading metrics come from the window's matured part only
    (implicit-negative policy, a window reaching into the maturity period); None when they are the whole window's."""

    @property
    def roc_auc(self) -> float | None:
        return self.ranking.roc_auc

    @property
    def average_precision(self) -> float | None:
        return self.ranking.average_precision

    def to_json(self) -> dict[str, Any]:
        return {
            "counts": self.counts.to_json(),
            "label_coverage": self.label_coverage.to_json(),
            "metrics": {
                **{k: r.to_json() for k, r in self.rates.items()},
                "f1": {"value": self.f1},
                "roc_auc": self.ranking.auc_json(),
                "average_precision": self.ranking.ap_json(),
                "brier": {"value": self.brier},
                "log_loss": {"value": self.log_loss},
                "ece": {"value": self.reliability.ece, "bins": 10},
            },
            "reliability": self.reliability.to_json(),
            "label_delay_seconds": self.label_delay_s,
            "matured_part": None if self.matured is None else self.matured.to_json(),
        }


def delay_quantiles(delay_hist: np.ndarray, qs: tuple[float, ...] = (0.5, 0.95)) -> dict[str, float | None]:
    """Label-delay quantiles in seconds: the geometric middle of the bin holding the quantile (grids.DELAY_MIDS).
    Reading a spot inside the bin by its counts would put a point mass (every label exactly 24 h late) anywhere up
    to a whole bin (8.7 %) too high or low; the middle is never more than half a bin (±4.3 %) off."""
    total = int(delay_hist.sum())
    out: dict[str, float | None] = {}
    cum = np.cumsum(delay_hist)
    for q in qs:
        key = f"p{int(round(q * 100))}"
        out[key] = float(DELAY_MIDS[int(np.searchsorted(cum, max(q * total, 1), side="left"))]) if total else None
    return out


def delay_upper(delay_hist: np.ndarray, q: float = 0.95) -> float | None:
    """The upper edge of the delay bin holding the q-quantile (seconds; the open last bin's lower edge): label
    maturity waits this long, so the bin's resolution (±4.3 %) can only make it wait longer, never declare a
    window matured before its labels arrived."""
    total = int(delay_hist.sum())
    if not total:
        return None
    i = int(np.searchsorted(np.cumsum(delay_hist), max(q * total, 1), side="left"))
    return float(DELAY_EDGES[min(i + 1, len(DELAY_EDGES) - 1)])


def classification(stats: BucketStats, ranking: Ranking | None = None) -> Metrics:
    """All classifier metrics of a window, each proportion with its Wilson interval and n; ROC AUC and average
    precision from `ranking` (readouts.ranking: exact when needed), else bounded from the score histograms."""
    c = counts(stats)
    rates = {
        "recall": rate(c.tp, c.positives),
        "fpr": rate(c.fp, c.negatives),
        "precision": rate(c.tp, c.tp + c.fp),
        "specificity": rate(c.tn, c.negatives),
        "accuracy": rate(c.tp + c.tn, c.labelled),
        "prevalence": rate(c.positives, c.labelled),
        "alert_rate": rate(c.flagged, c.predictions),
        "npv": rate(c.tn, c.tn + c.fn),
    }
    denom_f1 = 2 * c.tp + c.fp + c.fn
    return Metrics(
        counts=c,
        rates=rates,
        label_coverage=rate(c.labelled, c.predictions),
        f1=(2 * c.tp / denom_f1) if denom_f1 else None,
        ranking=ranking if ranking is not None else histogram_ranking(*ranking_hists(stats)),
        brier=brier_score(stats),
        log_loss=log_loss(stats),
        reliability=reliability_table(stats, 10),
        label_delay_s=delay_quantiles(stats.delay),
    )


