"""The words of the rendered alerts (`driftline alerts render`): each metric's titles, how a value and the agreed
line are printed in an annotation (as the CLI prints them), and a user's text kept literal in a Go template."""

from __future__ import annotations

import re

from .. import numbers
from ..durations import format_duration
from .model import Rule

TITLES = {"recall": ("Recall", "Recall"), "fpr": ("FPR", "False positive rate"),
          "precision": ("Precision", "Precision"), "alert_rate": ("Alert rate", "Alert rate"),
          "label_coverage": ("Label coverage", "Label coverage"), "prevalence": ("Prevalence", "Prevalence"),
          "specificity": ("Specificity", "Specificity"), "accuracy": ("Accuracy", "Accuracy"),
          "roc_auc": ("ROC AUC", "ROC AUC"), "average_precision": ("Average precision", "Average precision"),
          "brier": ("Brier score", "Brier score"), "log_loss": ("Log loss", "Log loss"),
          "ece": ("ECE", "Expected calibration error"),
          "label_delay_p50": ("Median label delay", "Median label delay"),
          "label_delay_p95": ("95th percentile label delay", "95th percentile label delay"),
          "dead_letter_rate": ("Dead-letter rate", "Share of messages dead-lettered"),
          "silence_seconds": ("Event silence", "Time since events were last stored"),
          "psi": ("PSI", "Population stability index"), "js": ("JS distance", "Jensen-Shannon distance"),
          "drifted": ("Drifted features", "Number of features the drift report calls drifted"),
          "multivariate_drift": ("Multivariate drift", "PCA reconstruction-error ratio to the reference"),
          "multivariate_drifted": ("Multivariate drift call", "Multivariate drift call (1 = drifted)")}


RATIO_FMT = 'printf "%.3f"'
"""Template filter of a ratio: a proportion with 3 places ('0.456'), as the CLI and `driftline metrics` print it
(user tryout: pages said '45.64%' and 'line 70%' where the CLI said '0.456' and 'line < 0.70')."""
STAT_FMT = 'printf "%.4f"'
"""Template filter of a statistic (PSI, JS, Brier, log loss): 4 places, as the CLI prints them."""
COUNT_FMT = 'printf "%.0f"'
"""Template filter of a count (features called drifted, a 1/0 call): a whole number, as the CLI prints it."""


def fmt_line(rule: Rule, unit: str) -> str:
    """The agreed line as the CLI writes it ('0.70', '0.085'); a duration as Prometheus' humanizeDuration would."""
    if unit == "seconds":
        return format_duration(rule.value) if rule.value > 0 else "0s"
    if unit == "count":
        return numbers.whole(rule.value)
    return numbers.line(rule.value)


def ratio_fmt_for(line: str) -> str:
    """RATIO_FMT, with more decimals when the agreed line has more (tryout: a line of 0.0005 read
    "is 0.000 (line <= 0.0005)")."""
    decimals = len(line.partition(".")[2]) if line[:1].isdigit() else 0
    return RATIO_FMT if decimals <= 3 else f'printf "%.{min(decimals, 9)}f"'


def value_tpl(unit: str, ratio_fmt: str = RATIO_FMT) -> str:
    if unit == "ratio":
        return f"{{{{ $value | {ratio_fmt} }}}}"
    if unit == "seconds":
        return "{{ $value | humanizeDuration }}"
    if unit == "count":
        return f"{{{{ $value | {COUNT_FMT} }}}}"
    return f"{{{{ $value | {STAT_FMT} }}}}"


def with_user(rule: Rule, generated: str) -> str:
    return f"{literal(rule.description.strip())} {generated}" if rule.description else generated


def literal(text: str) -> str:
    """`text` as literal text inside a Prometheus annotation, which is a Go template: each `{{` and `}}` is written
    as an action printing it (tryout: a trigger description "Check {{ broken …" gave a rules file promtool
    refused — 'function "broken" not defined' — and `{{ $value }}` in one was expanded)."""
    return re.sub(r"\{\{|\}\}", lambda m: '{{ "' + m.group() + '" }}', text)
