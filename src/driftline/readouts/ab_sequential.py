"""The A/B readout's always-valid (sequential) pieces: each metric's plan in its own units, the cost difference's
interval, and how many more observations until an interval excludes 0 (analysis.sequential holds the statistics)."""

from __future__ import annotations

import math
from typing import Any

from scipy.optimize import brentq

from ..analysis.abstats import ArmCounts
from ..analysis.sequential import SequentialPlan, cs_difference, cs_from_standard_error, mixture_margin
from ..config import AB
from .ab_shadow import ALPHA


def sequential_more_needed(k_t: int, n_t: int, k_c: int, n_c: int, plan: SequentialPlan,
                           limit: float = 1e9) -> int | None:
    """Further observations (both arms together, same split) after which the always-valid interval would
    exclude 0 if the observed difference and per-observation variance stayed as they are; 0 if it already
    does; None when the difference is 0 or undefined, or the answer exceeds `limit`."""
    s = cs_difference(k_t, n_t, k_c, n_c, plan)
    if s.diff is None or s.diff == 0 or min(n_t, n_c) == 0:
        return None
    if s.excludes_zero:
        return 0
    t = n_t + n_c
    pt, pc = (k_t + 1.0) / (n_t + 2.0), (k_c + 1.0) / (n_c + 2.0)
    sigma = math.sqrt(t * (pt * (1 - pt) / n_t + pc * (1 - pc) / n_c))
    gap = abs(s.diff)

    def excess(x: float) -> float:
        return sigma * mixture_margin(x, plan.rho2, plan.alpha) - gap

    hi = float(t)
    while excess(hi) >= 0:
        hi *= 2.0
        if hi > limit:
            return None
    lo = hi / 2.0 if hi > t else float(t)
    root = brentq(excess, lo, hi) if excess(lo) > 0 else lo
    return max(1, math.ceil(root - t))


def seq_plan(ab: AB, metric: str, t: ArmCounts, c: ArmCounts) -> SequentialPlan:
    """The plan in the metric's units: planned positives × pooled (n_metric / positives); for FPR and precision
    the ratio of the counts they read (the matured part's, under the implicit-negative policy)."""
    if metric in ("fpr", "precision"):
        t, c = t.negative_reading, c.negative_reading
    pos = t.positives + c.positives
    n = t.metric_counts(metric)[1] + c.metric_counts(metric)[1]
    if metric == "recall" or pos == 0 or n == 0:
        return SequentialPlan(float(ab.planned_positives), ALPHA)
    return SequentialPlan(ab.planned_positives * n / pos, ALPHA)


def cost_sequential(diff: float | None, se: float | None, t: ArmCounts, c: ArmCounts,
                    ab: AB) -> dict[str, Any]:
    """Always-valid interval of the cost difference from its delta-method standard error (one observation = one
    prediction; the plan is planned positives × pooled predictions / positives, that ratio of the counts the miss
    share reads: the matured part's, under the implicit-negative policy)."""
    n = t.predictions + c.predictions
    mt, mc = t.negative_reading, c.negative_reading
    ratio = (mt.predictions + mc.predictions) / (mt.positives + mc.positives) if mt.positives + mc.positives else 1.0
    plan = SequentialPlan(ab.planned_positives * ratio, ALPHA)
    s = cs_from_standard_error(diff, se, n, plan)
    return {"seq_low": s.low, "seq_high": s.high, "seq_excludes_zero": s.excludes_zero}
