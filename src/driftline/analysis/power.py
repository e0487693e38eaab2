"""Power for a recall comparison: the minimum detectable difference at the labelled positives so far, and
how many more labelled positives (and days) a target difference needs.

Two-sided test of two proportions on Cohen's arcsine scale h = 2·asin√p_T − 2·asin√p_C (the normal
approximation of statsmodels' NormalIndPower with proportion_effectsize), both rejection tails counted.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from scipy.optimize import brentq
from scipy.stats import norm

ALPHA = 0.05
POWER = 0.8


def power_h(h: float, n_control: float, n_treatment: float, alpha: float = ALPHA) -> float:
    """Power of the two-sided two-proportion z test for effect size h with the given group sizes."""
    if n_control <= 0 or n_treatment <= 0:
        return alpha
    n_eff = 1.0 / (1.0 / n_control + 1.0 / n_treatment)
    crit = float(norm.isf(alpha / 2.0))
    shift = abs(h) * math.sqrt(n_eff)
    return float(norm.sf(crit - shift) + norm.cdf(-crit - shift))


def mde_h(n_control: float, n_treatment: float, alpha: float = ALPHA, power: float = POWER) -> float | None:
    """Smallest |h| detected with the given power; None without observations in both groups."""
    if n_control <= 0 or n_treatment <= 0:
        return None
    return float(brentq(lambda h: power_h(h, n_control, n_treatment, alpha) - power, 1e-12, 50.0, xtol=1e-14))


def _shift(p: float, h: float) -> float | None:
    """The proportion at arcsine distance h from p (None when it would leave [0, 1])."""
    phi = math.asin(math.sqrt(p)) + h / 2.0
    if phi < 0.0 or phi > math.pi / 2.0:
        return None
    return math.sin(phi) ** 2


def mde_difference(p_control: float, n_control: float, n_treatment: float, alpha: float = ALPHA,
                   power: float = POWER, direction: int = 1) -> float | None:
    """Minimum detectable p_T − p_C (direction +1: an increase, −1: a decrease); None if unreachable."""
    h = mde_h(n_control, n_treatment, alpha, power)
    if h is None:
        return None
    p_t = _shift(p_control, direction * h)
    return None if p_t is None else p_t - p_control


def n_per_arm_for(p_control: float, diff: float, alpha: float = ALPHA, power: float = POWER,
                  ratio: float = 1.0) -> float | None:
    """Control-arm size (treatment = ratio × it) at which p_C → p_C + diff is detected with the power."""
    p_t = p_control + diff
    if diff == 0 or not 0.0 <= p_t <= 1.0:
        return None
    h = abs(2.0 * math.asin(math.sqrt(p_t)) - 2.0 * math.asin(math.sqrt(p_control)))
    return float(brentq(lambda n: power_h(h, n, ratio * n, alpha) - power, 1e-9, 1e13, xtol=1e-9))


@dataclass(frozen=True, slots=True)
class RecallPower:
    """Minimum detectable recall difference now, and what a target difference still needs."""

    p_control: float | None
    n_control: int
    n_treatment: int
    mde: float | None
    target_diff: float | None
    needed_per_arm: int | None
    more_per_arm: int | None
    days: int | None
    more_control: int | None = None
    more_treatment: int | None = None

    def to_json(self) -> dict[str, float | int | None]:
        return {"p_control": self.p_control, "n_control": self.n_control, "n_treatment": self.n_treatment,
                "mde": self.mde, "target_diff": self.target_diff, "needed_per_arm": self.needed_per_arm,
                "more_per_arm": self.more_per_arm, "days": self.days, "more_control": self.more_control,
                "more_treatment": self.more_treatment}


def days_to_power(h: float, n_control: float, n_treatment: float, rate_control: float, rate_treatment: float,
                  alpha: float = ALPHA, power: float = POWER) -> float | None:
    """Days until |h| is detected with the power when each arm keeps gaining labelled positives at its own
    daily rate (0 when already; None when an arm gains none): an unequal split grows n_eff = n_C·n_T/(n_C+n_T)
    at its own pace, which "needed per equal arm − the smaller arm, at the smaller arm's rate" overstated (a
    90/10 split read 139 days where 73 suffice)."""
    if power_h(h, n_control, n_treatment, alpha) >= power:
        return 0.0
    if rate_control <= 0 or rate_treatment <= 0 or h == 0:
        return None
    def short(d: float) -> float:
        return power_h(h, n_control + rate_control * d, n_treatment + rate_treatment * d, alpha) - power
    hi = 1.0
    while short(hi) < 0:
        hi *= 2.0
        if hi > 1e12:
            return None
    return float(brentq(short, 0.0, hi, xtol=1e-9))


def days_to_power_curves(h: float, control: Callable[[float], float], treatment: Callable[[float], float],
                         alpha: float = ALPHA, power: float = POWER, limit: float = 36525.0) -> float | None:
    """Days until |h| is detected with the power when the arms' labelled positives after d days are control(d)
    and treatment(d) (non-decreasing; analysis.label_pipeline: label delay and the predictions already waiting);
    0 when already, None when not within `limit` days."""
    def short(d: float) -> float:
        return power_h(h, control(d), treatment(d), alpha) - power
    if short(0.0) >= 0:
        return 0.0
    if h == 0 or short(limit) < 0:
        return None
    return float(brentq(short, 0.0, limit, xtol=1e-6))


def recall_power(k_control: int, n_control: int, n_treatment: int, target_diff: float | None = None,
                 positives_per_arm_per_day: float | None = None, alpha: float = ALPHA,
                 power: float = POWER, arm_rates: tuple[float, float] | None = None,
                 curves: tuple[Callable[[float], float], Callable[[float], float]] | None = None) -> RecallPower:
    """MDE at the current labelled positives per arm (control recall as baseline), and for a target
    difference the labelled positives per arm needed (equal arms), how many more, and days at a rate.

    With `arm_rates` (control, treatment labelled positives per day) the days are those at which the arms, each
    growing at its own rate, reach the power (`days_to_power`), and `more_control`/`more_treatment` what each
    arm gains by then: right for unequal splits too. With `curves` (each arm's expected labelled positives after
    d days, days_to_power_curves) instead: the label delay and the predictions already waiting for their labels
    count, which a constant rate of labels so far misses (churn tryout: 221 days where about 80 suffice).
    """
    p_c = k_control / n_control if n_control else None
    mde = None if p_c is None else mde_difference(p_c, n_control, n_treatment, alpha, power)
    needed = more = days = None
    if p_c is not None and target_diff is not None:
        n = n_per_arm_for(p_c, target_diff, alpha, power)
        if n is not None:
            needed = math.ceil(n)
            more = max(0, needed - min(n_control, n_treatment))
            if positives_per_arm_per_day and positives_per_arm_per_day > 0:
                days = math.ceil(more / positives_per_arm_per_day)
    more_c = more_t = None
    if curves is not None and needed is not None and p_c is not None and target_diff is not None:
        h = 2.0 * math.asin(math.sqrt(p_c + target_diff)) - 2.0 * math.asin(math.sqrt(p_c))
        d = days_to_power_curves(h, curves[0], curves[1], alpha, power)
        days = None if d is None else math.ceil(d)
        if d is not None:
            more_c = max(0, math.ceil(curves[0](d) - n_control))
            more_t = max(0, math.ceil(curves[1](d) - n_treatment))
    elif arm_rates is not None and needed is not None and p_c is not None and target_diff is not None:
        h = 2.0 * math.asin(math.sqrt(p_c + target_diff)) - 2.0 * math.asin(math.sqrt(p_c))
        d = days_to_power(h, n_control, n_treatment, arm_rates[0], arm_rates[1], alpha, power)
        days = None if d is None else math.ceil(d)
        if d is not None:
            more_c, more_t = math.ceil(arm_rates[0] * d), math.ceil(arm_rates[1] * d)
    return RecallPower(p_c, n_control, n_treatment, mde, target_diff, needed, more, days, more_c, more_t)
