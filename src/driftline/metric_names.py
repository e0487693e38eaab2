"""The names a trigger can watch (read by config validation at start and by triggers/metrics, which reads them)."""

from __future__ import annotations

import difflib
from typing import Any

from . import numbers
from .durations import MAX_WINDOW_DAYS, MAX_WINDOW_S, format_duration, parse_duration

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
READS_NEGATIVES = frozenset({"fpr", "precision", "specificity", "accuracy", "prevalence", "npv", "label_coverage",
                             "roc_auc", "average_precision", "brier", "log_loss", "ece", "f1"})
"""Metrics whose value depends on the labelled negatives (recall, the alert rate, label delays, pipeline and drift
metrics do not): under the implicit-negative policy they wait `labels.implicit_negative_after` for most of them."""
ALIASES = {"brier_score": "brier", "js_distance": "js", "label_delay_median": "label_delay_p50",
           "event_silence": "silence_seconds", "silence": "silence_seconds"}
KNOWN = tuple(sorted({*RATES, "label_coverage", *SCORES, *DELAYS, *PIPELINE, *DRIFT, *MULTIVARIATE}))
"""Every catalogue name (aliases aside)."""
PROPORTIONS = frozenset({*RATES, "label_coverage", "roc_auc", "average_precision", "f1", "brier", "ece", "js"})
"""Metrics whose every value lies in [0, 1]: a trigger line or target outside it is refused at load (`recall < 7`
always fires, `recall: 7` as a target is never met)."""
KPI_TARGETS = {"missed_cost": "missed_cost", "review_hours": "review_hours", "complaints": "complaints",
               "model_cost": "model_cost", "total_cost": "total", "total": "total", "review_cost": "review_cost",
               "fraud_lost": "missed_cost", "analyst_hours": "review_hours"}
"""config.targets keys that bound a monthly KPI from above (seed 000: missed-fraud cost < €200,000, review hours
< 1,500, ...) → the KPI's field in the report; `fraud_lost` and `analyst_hours` are the older names of
`missed_cost` and `review_hours`. Read by the config (a key neither this nor a metric is refused) and the report."""


def value_problem(metric: str, value: float) -> str | None:
    """Why `value` cannot be a line or target of `metric` (not finite; outside [0, 1] for a proportion; negative
    for a KPI), else None."""
    if value != value or value in (float("inf"), float("-inf")):
        return f"{value} is not a finite number (a comparison with it is never true)"
    if canonical(metric) in PROPORTIONS and not 0.0 <= value <= 1.0:
        hint = f" (a percentage? write it as a fraction: {value / 100:g})" if 1 < value <= 100 else ""
        return f"{value:g} is outside 0..1, the range of {canonical(metric)}{hint}"
    if metric in KPI_TARGETS and value < 0:
        return f"{value:g} is negative (a monthly ceiling)"
    if canonical(metric) in TIME_METRICS and not 0.0 <= value <= MAX_WINDOW_S:
        # as every duration of the config: `value: -1d` and `1000000d` were refused and accepted, `-5` accepted
        # (its rendered summary read `line > 0s` against `> -5`)
        return (f"{value:g} seconds is {'negative' if value < 0 else f'longer than {MAX_WINDOW_DAYS}d (100 years)'}"
                f"{'' if value < 0 else f' ({numbers.duration(value)})'}"
                f": {canonical(metric)} is a time, 0 to {MAX_WINDOW_DAYS}d")
    return None


TIME_METRICS = frozenset({*DELAYS, "silence_seconds"})
"""Metrics measured in seconds: a trigger's `value` on them may be a duration ('30d'), a bare number is seconds."""

_KIND = {**{m: "a proportion from 0 to 1" for m in PROPORTIONS}, **{m: "a count" for m in COUNTS}}


def trigger_line(metric: str, value: float | str) -> float:
    """A trigger's `value` as the number it is compared with: a duration ('30d', '12h') in seconds for a metric
    measured in seconds, a number as given; ValueError saying why for a duration on any other metric, or text that
    is no duration. Tryout: `label_delay_p95 > 30d`, as the README writes it, was refused (`Expected float`)."""
    if not isinstance(value, str):
        return float(value)
    m = canonical(metric)
    if m in TIME_METRICS:
        if _number(value):
            raise ValueError(f"{value!r} is a number written as text: remove the quotes (a bare number is seconds) "
                             f"or add a unit, e.g. '{value.strip()}s'")
        try:
            return parse_duration(value, allow_zero=True)
        except ValueError as err:
            raise ValueError(f"{err} ({m} is measured in seconds: write a duration such as '30d' or '12h', or a "
                             "number of seconds)") from None
    try:
        parse_duration(value, allow_zero=True)
    except ValueError:
        pass
    else:
        raise ValueError(f"{value!r} is a duration, but {m} is not measured in time (it is "
                         f"{_KIND.get(m, 'a statistic')}): write a number; durations are for "
                         f"{', '.join(sorted(TIME_METRICS))}")
    text = value.strip()
    if text.endswith("%"):
        try:
            hint = f" (a percentage? write it as a fraction: {float(text[:-1]) / 100:g})"
        except ValueError:
            hint = ""
        raise ValueError(f"{value!r} is text, not a number{hint}")
    if _number(text):
        raise ValueError(f"{value!r} is a number written as text: remove the quotes")
    raise ValueError(f"{value!r} is not a number")


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def unknown_target(key: str) -> str | None:
    """None for a `targets` key the config accepts (a metric, an alias or a KPI), else why not, with the closest."""
    if key in KNOWN or key in KPI_TARGETS:
        return None
    if key in ALIASES:  # agreed_target looks a metric up by its catalogue name
        return f"{key!r} is read as {ALIASES[key]!r} in triggers only; write {ALIASES[key]!r}"
    close = difflib.get_close_matches(key, [*KNOWN, *KPI_TARGETS], n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return (f"{key!r} is neither a metric nor a monthly KPI{hint}; a target nobody reads is never judged "
            f"(KPIs: {', '.join(sorted(KPI_TARGETS))})")


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
    return line_text(rule.metric, rule.value)


_UNIT_S = {"d": 86400.0, "h": 3600.0, "min": 60.0, "s": 1.0}
"""Seconds of each unit numbers.duration writes."""


def line_text(metric: str, value: float) -> str:
    """fmt_line of a metric and a line in its unit (seconds for a duration)."""
    m = canonical(metric)
    if m in TIME_METRICS:  # rounded only where that is exact: an agreed line of 90061 s read '> 1 d' (verify tryout)
        text = numbers.duration(value)
        num, unit = text.split(" ")
        return text if float(num) * _UNIT_S[unit] == value else format_duration(value)
    if m in COUNTS:
        return numbers.whole(value)
    return numbers.line(value)
