"""What a trigger can watch: the metric catalogue and the pure reading of a metric from window statistics.

Rates (Wilson intervals) and scores come from `classification(merged window)`, exactly as `driftline metrics`;
pipeline metrics (dead-letter rate, event silence) from the store counters and when events were last stored; drift
statistics from a pluggable provider (see drift_hook).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .. import numbers
from ..analysis.classification import Metrics
from ..analysis.rates import rate
from ..metric_names import (fmt_line, ALIASES, COUNTS, DELAYS, DRIFT, KNOWN, MULTIVARIATE, PIPELINE, RATES, SCORES,  # noqa: F401
                            canonical)  # re-exported
from .model import Observation


@dataclass(frozen=True, slots=True)
class MetricInfo:
    """How a metric is read and shown: its unit ('ratio', 'seconds', 'count', '') and whether it is windowed."""

    name: str
    unit: str
    windowed: bool
    has_interval: bool


def info(metric: str) -> MetricInfo:
    """Catalogue entry of a metric; ValueError for an unknown name."""
    m = canonical(metric)
    if m in RATES or m == "label_coverage":
        return MetricInfo(m, "ratio", True, True)
    if m in ("roc_auc", "average_precision"):
        return MetricInfo(m, "ratio", True, True)
    if m in ("ece", "f1"):
        return MetricInfo(m, "ratio", True, False)
    if m in ("brier", "log_loss"):
        return MetricInfo(m, "", True, False)
    if m in DELAYS:
        return MetricInfo(m, "seconds", True, False)
    if m == "dead_letter_rate":
        return MetricInfo(m, "ratio", False, True)
    if m == "silence_seconds":
        return MetricInfo(m, "seconds", False, False)
    if m in COUNTS:
        return MetricInfo(m, "count", True, False)
    if m in DRIFT or m in MULTIVARIATE:
        return MetricInfo(m, "", True, False)
    raise ValueError(f"unknown trigger metric {metric!r}; known: {', '.join(KNOWN)}")


def shown_value(metric: str | None, v: float | None) -> str:
    """A trigger metric's value as every output shows it (`alerts`, the weekly report's trigger table):
    proportions as 0.588, durations as 3.2 h, counts as 2, statistics (PSI, JS) with 4 places. By the metric's
    name, not the configured rule: a history row of a trigger no longer (or not here) configured reads like every
    other row. (The report once wrote a label-delay line as `> 1.2096e+06` and its value as `1084094.738`.)"""
    if v is None:
        return numbers.MISSING
    try:
        unit = None if metric is None else info(metric).unit
    except ValueError:  # a metric this version no longer knows: its number as a statistic
        unit = None
    if unit == "ratio":
        return numbers.prop(v)
    if unit == "seconds":
        return numbers.duration(v)
    if unit == "count":
        return numbers.whole(v)
    return numbers.stat(v)


def from_metrics(metric: str, m: Metrics) -> Observation:
    """Reading of a windowed classifier metric; the n is the denominator that makes it meaningful."""
    name = canonical(metric)
    c = m.counts if m.matured is None else m.matured.counts  # the scores read the matured part: analysis.matured
    if name in RATES or name == "label_coverage":
        r = m.label_coverage if name == "label_coverage" else m.rates[name]
        return Observation(r.value, r.low, r.high, r.n)
    if name == "roc_auc":
        ci = m.ranking.roc_auc_interval
        lo, hi = ci if ci is not None else (None, None)
        return Observation(m.roc_auc, lo, hi, min(c.positives, c.negatives), interval_expected=True)
    if name == "average_precision":
        ci = m.ranking.average_precision_interval
        lo, hi = ci if ci is not None else (None, None)
        return Observation(m.average_precision, lo, hi, c.positives, interval_expected=True)
    if name == "f1":
        return Observation(m.f1, n=c.positives)
    if name == "brier":
        return Observation(m.brier, n=c.labelled)
    if name == "log_loss":
        return Observation(m.log_loss, n=c.labelled)
    if name == "ece":
        return Observation(m.reliability.ece, n=c.labelled)
    if name in DELAYS:  # the whole window's labels
        return Observation(m.label_delay_s.get(name.removeprefix("label_delay_")),
                           n=m.counts.labelled - m.counts.implicit_negatives)
    raise ValueError(f"{metric!r} is not a windowed classifier metric")


def dead_letter_rate(counters: Mapping[tuple[str, str], int]) -> Observation:
    """Share of messages rejected since the database was created: dead letters ÷ (accepted events + dead letters),
    with its Wilson interval; n = messages read."""
    dead = sum(v for (name, _), v in counters.items() if name == "dead_letters")
    events = sum(v for (name, _), v in counters.items() if name == "events")
    r = rate(dead, dead + events)
    return Observation(r.value, r.low, r.high, r.n)


def silence(last_stored_ts: float | None, now: float, events_seen: int) -> Observation:
    """Seconds since events (prediction or outcome) were last stored, by wall clock; no value before the first."""
    if last_stored_ts is None:
        return Observation(None, n=events_seen)
    return Observation(max(0.0, now - last_stored_ts), n=events_seen)
