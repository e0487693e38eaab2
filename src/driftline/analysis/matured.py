"""Metrics of a window whose newest predictions have not had their implicit negative label yet.

Under `labels.policy: implicit_negative_after` a prediction without an outcome becomes a negative only
`implicit_negative_after` after it, while explicit outcomes (positives, mostly) arrive at any age. Over a window
reaching into that period the labelled predictions are the matured ones plus the young ones reported early: the
young part brings positives without its negatives, so precision, prevalence, accuracy, npv, F1 and the
calibration scores read high or skewed (churn tryout: precision 0.80 where 0.62 is right). Rates that read
negatives are therefore taken over the matured part alone; recall (positives only), the alert rate (no labels) and
the label coverage (a description of the whole window) stay over the whole window.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from .classification import Counts, Metrics

WHOLE_WINDOW = ("recall", "alert_rate")
"""Rates of Metrics.rates read over the whole window: they need no labelled negative."""
READ_MATURED = ("fpr", "precision", "specificity", "accuracy", "prevalence", "npv", "f1", "roc_auc",
                "average_precision", "brier", "log_loss", "ece")
"""The metrics read over the matured part (in the words of the metrics document)."""


@dataclass(frozen=True, slots=True)
class MaturedPart:
    """Which part of the window the negative-reading metrics come from, and what is left out of them."""

    before: str
    """ISO time: predictions before it are at least `implicit_negative_after` old at the newest stored event."""
    implicit_after_s: float
    counts: Counts
    """Counts of the matured part (the whole window's are Metrics.counts)."""
    young_predictions: int
    """Predictions of the window made at or after `before`: left out of the negative-reading metrics."""
    awaiting_implicit: int
    """Of them, those without an outcome yet: still awaiting their implicit label."""

    def to_json(self) -> dict[str, Any]:
        return {"before": self.before, "implicit_negative_after_s": self.implicit_after_s,
                "predictions": self.counts.predictions, "labelled": self.counts.labelled,
                "young_predictions": self.young_predictions, "awaiting_implicit": self.awaiting_implicit,
                "metrics": list(READ_MATURED), "counts": self.counts.to_json()}

    def note(self) -> str:
        """One sentence for the readouts."""
        from ..numbers import duration
        total = self.counts.predictions + self.young_predictions
        head = (f"only part of this window has matured labels: fpr, precision, specificity, accuracy, prevalence, "
                f"npv, F1, ROC AUC, average precision, Brier, log loss and ECE are read over its predictions "
                f"before {self.before} ({self.counts.predictions:,} of {total:,}), the ones at least "
                f"labels.implicit_negative_after ({duration(self.implicit_after_s)}) old")
        return (f"{head}; the {self.young_predictions:,} younger ones ({self.awaiting_implicit:,} still awaiting "
                f"their implicit label) count in recall, alert rate and label coverage only, as their early "
                f"outcomes come without their negatives")


def with_matured(whole: Metrics, matured: Metrics, part: MaturedPart) -> Metrics:
    """The window's metrics: recall, alert rate, label coverage, counts and label delays from `whole`; every
    metric that reads labelled negatives from `matured` (its predictions all labelled or implicit negatives)."""
    rates = {k: (whole.rates[k] if k in WHOLE_WINDOW else r) for k, r in matured.rates.items()}
    return dataclasses.replace(matured, counts=whole.counts, rates=rates, label_coverage=whole.label_coverage,
                               label_delay_s=whole.label_delay_s, matured=part)
