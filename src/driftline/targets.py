"""The agreed target of a metric: the config's `targets` entry, else the line of the model-wide triggers on it.

A trigger firing when recall < 0.70 says the agreed recall is at least 0.70 (of several lines, the strictest), so
the report's headline and the slice ranking judge against the same numbers the alerts use.
"""

from __future__ import annotations

from dataclasses import dataclass

from .config import Config

LOWER_IS_BETTER = frozenset({"fpr", "alert_rate", "brier", "log_loss", "ece", "label_delay_p50", "label_delay_p95"})
"""Metrics whose `targets` entry is a maximum; every other metric's is a minimum."""


@dataclass(frozen=True, slots=True)
class Target:
    """A target value, whether it is a maximum, and where it came from ('targets' or 'trigger <name>')."""

    value: float
    lower_better: bool
    source: str


def agreed_target(config: Config, metric: str) -> Target | None:
    """The metric's target from `targets`, else from the model-wide triggers (no feature, no variant); None."""
    if metric in config.targets:
        return Target(float(config.targets[metric]), metric in LOWER_IS_BETTER, "targets")
    lines = [t for t in config.triggers if t.metric == metric and t.feature is None and t.variant is None]
    below = [t for t in lines if t.op in ("<", "<=")]
    if below:
        t = max(below, key=lambda x: x.line)
        return Target(t.line, False, f"trigger {t.name}")
    if lines:
        t = min(lines, key=lambda x: x.line)
        return Target(t.line, True, f"trigger {t.name}")
    return None
