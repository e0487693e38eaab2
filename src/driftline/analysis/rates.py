"""Proportions with their evidence: a value, a 95 % Wilson interval and the n behind it."""

from __future__ import annotations

import math
from dataclasses import dataclass

Z95 = 1.959963984540054
"""scipy.stats.norm.ppf(0.975) as a literal (a test checks it): importing scipy.stats would cost every query
command most of a second (issue 17)."""
INDICATIVE_BELOW_N = 30


@dataclass(frozen=True, slots=True)
class Rate:
    """A proportion k/n with a Wilson score interval; value/low/high are None when n == 0."""

    value: float | None
    low: float | None
    high: float | None
    n: int
    k: int = 0
    method: str = "wilson"

    @property
    def indicative(self) -> bool:
        """True when n is too small (< 30) for the rate to be more than indicative."""
        return self.n < INDICATIVE_BELOW_N

    def to_json(self) -> dict[str, float | int | bool | None]:
        return {
            "value": self.value,
            "low": self.low,
            "high": self.high,
            "n": self.n,
            "k": self.k,
            "indicative": self.indicative,
        }


def wilson_interval(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for k successes in n trials (n > 0)."""
    if n <= 0:
        raise ValueError("wilson_interval needs n > 0")
    p = k / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = (z / denom) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    # the bound at an observed 0 or n is exactly 0 or 1 (centre ± half cancel only up to rounding: 0/14 gave
    # 1.4e-17, which a `confident` trigger on `fpr > 0` read as a lower bound above 0)
    return (0.0 if k == 0 else max(0.0, centre - half)), (1.0 if k == n else min(1.0, centre + half))


def rate(k: int, n: int, z: float = Z95) -> Rate:
    """k/n with its Wilson interval; null value and bounds when n == 0 (never 0 or NaN)."""
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"invalid proportion {k}/{n}")
    if n == 0:
        return Rate(None, None, None, 0, 0)
    low, high = wilson_interval(k, n, z)
    return Rate(k / n, low, high, n, k)
