"""The label-maturity section's sentences: what the maturity period is.

The period (readouts.drift.maturity_period) is the 95th-percentile delay of the labels received in the
`labels.horizon` before the week's end, not the week's own p95, which counts only the week's labels received so
far (its slowest ones are missing while it matures): the sentences say which is which (user tryout: "p95 3.7 d …
matured 5.5 d after prediction (by the 95th-percentile label delay)").
"""

from __future__ import annotations

from typing import Any

from .. import numbers
from ..config import Config
from ..readouts.maturity import method_text


def basis_text(config: Config, method: str, period: float | None, week_p95: float | None,
               pending: bool) -> str:
    """How the maturity period was decided, after 'Labels count as matured <period> after prediction';
    set against the week's own p95 when the two read differently."""
    if method != "label_delay_p95" or period is None:
        return f"by the {method_text(method)}"
    horizon = numbers.duration(config.labels.horizon_s)
    text = (f"the 95th-percentile label delay of the labelled predictions made in the {horizon} (`labels.horizon`) "
            "before the week's end, rounded up to whole buckets")
    if week_p95 is None or numbers.duration(week_p95) == numbers.duration(period):
        return text
    if pending and week_p95 < period:
        return (f"{text}; the week's own p95 ({numbers.duration(week_p95)}) is lower because it counts only the "
                "labels received so far, and the week's slowest labels are still to come")
    return f"{text}, not the week's own p95 ({numbers.duration(week_p95)}), which covers only this week's predictions"

