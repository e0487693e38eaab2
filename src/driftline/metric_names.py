"""The names a trigger can watch (read by config validation at start and by triggers/metrics, which reads them)."""

from __future__ import annotations

import difflib
from typing import Any

from . import numbers

RATES = ("recall", "fpr", "precision", "specificity", "accuracy", "prevalence", "alert_rate", "npv")
"""Proportions of the metrics document (each with value/low/high/n); label_coverage is one too."""

SCORES = ("roc_auc", "average_precision", "brier", "log_loss", "ece", "f1")
DELAYS = ("label_delay_p50", "label_delay_p95")
PIPELINE = ("dead_letter_rate", "silence_seconds")
DRIFT = ("psi", "js", "drifted")
"""Drift readings: a feature's (or the score's) PSI or JS, and `drifted`, the report's calibrated call (1/0 for a
feature; without a feature the number of features called drifted) whose per-report false-alarm rate is drift.alpha."""
MULTIVARIATE = ("multivariate_drift", "multivariate_drifted")
"""Multivariate drift of the window's feature sample (no `feature`): `multivariate_drift` is the PCA
reconstruction-error ratio to the reference's (1 = as expected), `multivariate_drifted` the calibrated call (1/0)
whose per-report false-alarm rate is drift.alpha."""
COUNTS = ("drifted", "multivariate_drifted")
"""Metrics whose value is a whole count (features called drifted; a 1/0 call), shown as one: '2', 'drifted > 0'
(tryout: `alerts` printed 'drifted > 0.00' and a value of '2.0000')."""
ALIASES = {"brier_score": "brier", "js_distance": "js", "label_delay_median": "label_delay_p50",
           "event_silence": "silence_seconds", "silence": "silence_seconds"}
KNOWN = tuple(sorted({*RATES, "label_coverage", *SCORES, *DELAYS, *PIPELINE, *DRIFT, *MULTIVARIATE}))
"""Every catalogue name (aliases aside)."""


def canonical(metric: str) -> str:
    """The catalogue name of a metric (accepts a few aliases such as brier_score, js_distance)."""
    return ALIASES.get(metric, metric)


def unknown_metric(metric: str) -> str | None:
    """None for a known metric (or alias), else why not: the closest names, or the whole catalogue."""
    if canonical(metric) in KNOWN:
        return None
    close = difflib.get_close_matches(metric, [*KNOWN, *ALIASES], n=3, cutoff=0.6)
    if close:
        return f"unknown metric {metric!r} (did you mean {' or '.join(repr(c) for c in close)}?)"
    return f"unknown metric {metric!r}; known: {', '.join(KNOWN)}"


def fmt_line(rule: Any) -> str:
    """A trigger's line as it was agreed, the same in every output: '0.70', '0.085'; a duration for seconds."""
    m = canonical(rule.metric)
    if m in DELAYS or m == "silence_seconds":
        return numbers.duration(rule.value)
    if m in COUNTS:
        return numbers.whole(rule.value)
    return numbers.line(rule.value)
