"""How numbers read for people: one rule for every terminal table and line (and offered to the reports).

The rule (README, "Reading the output"):
- proportions (rates, shares, precision, AUC, F1 …) as decimals with 3 places, an interval in brackets and the
  count behind it: `0.588 [0.547, 0.627] n=550`; `*` marks an indicative rate (fewer than 30 cases);
- differences signed, their interval as any interval: `+0.056 [-0.018, 0.130]`;
- relative changes as signed percentages: `+8.2 % [-19.0 %, +40.1 %]`;
- small error and divergence statistics (ECE, Brier, log loss, PSI, JS) with 4 places: `0.0123`;
- counts and money with thousands separators (`12,345`; money whole from 100, else 2 places), with an interval
  wherever one exists: `1,234 [1,100, 1,380]`;
- p-values with 2 significant digits, `<0.0001` below that; missing values as `—`.
Pure functions of their arguments; nothing here knows about rich.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MISSING = "—"
PLACES = 3
"""Decimal places of a proportion."""
STAT_PLACES = 4
"""Decimal places of a small error/divergence statistic."""


def prop(v: float | None) -> str:
    """A proportion: '0.588' (3 places), '—' when undefined."""
    return MISSING if v is None else f"{v:.{PLACES}f}"


def interval(lo: float | None, hi: float | None) -> str:
    """'[0.547, 0.627]' for a proportion's interval, '—' when either end is undefined."""
    return MISSING if lo is None or hi is None else f"[{lo:.{PLACES}f}, {hi:.{PLACES}f}]"


def count(n: int | float | None) -> str:
    """'12,345' (thousands separators), '—' when unknown."""
    return MISSING if n is None else f"{n:,.0f}"


def rate(r: Mapping[str, Any]) -> str:
    """'0.588 [0.547, 0.627] n=550' for a rate document ({value, low, high, n, indicative}); '* ' marks an indicative
    one (n < 30), '— (n=0)' an empty one."""
    if r.get("value") is None:
        return f"{MISSING} (n={count(r.get('n') or 0)})"
    star = "*" if r.get("indicative") else ""
    return f"{prop(r['value'])} {interval(r['low'], r['high'])} n={count(r['n'])}{star}"


def estimate(e: Mapping[str, Any]) -> str:
    """'~0.712 [0.650, 0.770]': a label-free estimate (the ~ marks it), '—' when undefined."""
    if e.get("value") is None:
        return MISSING
    return f"~{prop(e['value'])} {interval(e.get('low'), e.get('high'))}"


def diff(d: float | None, lo: float | None = None, hi: float | None = None) -> str:
    """'+0.056 [-0.018, 0.130]': a signed difference of proportions with its interval, '—' when undefined."""
    if d is None:
        return MISSING
    iv = "" if lo is None or hi is None else " " + interval(lo, hi)
    return f"{d:+.{PLACES}f}{iv}"


def stat(v: float | None) -> str:
    """A small error or divergence statistic (ECE, Brier, log loss, PSI, JS): '0.0123'."""
    return MISSING if v is None else f"{v:.{STAT_PLACES}f}"


def _money_places(*vs: float | None) -> int:
    return 0 if max(abs(v) for v in vs if v is not None) >= 100 else 2


def money(v: float | None, lo: float | None = None, hi: float | None = None, signed: bool = False) -> str:
    """'1,234 [1,100, 1,380]' (whole from 100, else 2 places; the interval when given); `signed`: '+1,234 [-20, 2,400]'."""
    if v is None:
        return MISSING
    d = _money_places(v, lo, hi)
    iv = "" if lo is None or hi is None else f" [{lo:,.{d}f}, {hi:,.{d}f}]"
    return f"{v:{'+' if signed else ''},.{d}f}{iv}"


def pvalue(p: float | None) -> str:
    """'0.032', '<0.0001', '—'."""
    return MISSING if p is None else ("<0.0001" if p < 1e-4 else f"{p:.2g}")


def percent(v: float | None, places: int = 1, signed: bool = False) -> str:
    """A share or relative change as a percentage: '50.0 %' ('+5.3 %' signed); for shares of a whole, not rates."""
    if v is None:
        return MISSING
    return f"{100 * v:{'+' if signed else ''}.{places}f} %"


def duration(seconds: float | None) -> str:
    """'1.5 d', '3.2 h', '12 min', '45 s'."""
    if seconds is None:
        return MISSING
    if seconds >= 86400:
        return f"{seconds / 86400:.1f} d"
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"


def indicative_used(rates: Any) -> bool:
    """Whether any rate document in a nested structure is marked indicative (so the `*` footnote is needed)."""
    if isinstance(rates, Mapping):
        if rates.get("indicative") is True and rates.get("value") is not None:
            return True
        return any(indicative_used(v) for v in rates.values())
    if isinstance(rates, (list, tuple)):
        return any(indicative_used(v) for v in rates)
    return False
