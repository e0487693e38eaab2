"""The label-maturity section's sentences: what the maturity period is and why a week is provisional.

The period (readouts.drift.maturity_period) is the top of the delay bin holding the 95th-percentile delay of the
labels received in the `labels.horizon` before the week's end (so never short of the labels' true delay), not the
week's own p95, which counts only the week's labels received so far (its slowest ones are missing while it
matures): the sentences say which is which (user tryout: "p95 3.7 d … matured 5.5 d after prediction (by the
95th-percentile label delay)"). A week is provisional while a day with predictions is within that period or the
week has not ended, and says which (it read "Provisional: every day of the week is past its label-maturity
period" for a week not yet over).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import numbers
from ..config import Config
from ..core.grids import DELAY_EDGES, delay_bin
from ..readouts.maturity import method_text


def basis_text(config: Config, method: str, period: float | None, week_p95: float | None,
               pending: bool) -> str:
    """How the maturity period was decided, after 'Labels count as matured <period> after prediction';
    set against the week's own p95 when the two read differently."""
    if method != "label_delay_p95" or period is None:
        return f"by the {method_text(method)}"
    horizon = numbers.duration(config.labels.horizon_s)
    text = (f"the 95th-percentile label delay of the labelled predictions made in the {horizon} (`labels.horizon`) "
            "before the week's end, taken at the top of its delay bin and rounded up to whole buckets")
    if (week_p95 is None or _as_wait(config, week_p95) == period
            or numbers.duration(week_p95) == numbers.duration(period)):
        return text
    if pending and week_p95 < period:
        return (f"{text}; the week's own p95 ({numbers.duration(week_p95)}) is lower because it counts only the "
                "labels received so far, and the week's slowest labels are still to come")
    return f"{text}, not the week's own p95 ({numbers.duration(week_p95)}), which covers only this week's predictions"



def _as_wait(config: Config, p95: float) -> float:
    """A shown p95 (its bin's middle) as the maturity rule turns it into a wait: the bin's top, in whole buckets;
    so a week whose own p95 lies in the period's bin is not set against it as if the two differed."""
    i = int(delay_bin(np.array([p95]))[0])
    top = float(DELAY_EDGES[min(i + 1, len(DELAY_EDGES) - 1)])
    return max(math.ceil(top / config.bucket_s), 1) * config.bucket_s


def provisional_note(by_day: list[dict[str, Any]], period: float | None, week_ended: bool, ends: str) -> str:
    """Why the week's numbers can still move (days not yet matured, the week not over), or that they cannot;
    `ends` is the week's end as shown."""
    if period is None:
        return "no label has been seen yet for this model: every number is provisional"
    pending = [d for d in by_day if d["provisional"] and d["predictions"]]
    reasons = []
    if pending:
        days = pending[0]["date"] if len(pending) == 1 else f"{pending[0]['date']} to {pending[-1]['date']}"
        are = "is" if len(pending) == 1 else "are"  # tryout: "1 of the week's days … are within"
        reasons.append(f"labels still arriving: {len(pending)} of the week's days with predictions ({days}) {are} "
                       "within their label-maturity period, so their numbers will move as late outcomes arrive")
    if not week_ended:
        reasons.append(f"the week has not ended yet (it ends {ends}), so its later days are still to come")
    return "; ".join(reasons) if reasons else "every day of the week is past its label-maturity period"
