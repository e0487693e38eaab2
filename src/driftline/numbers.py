"""How numbers read for people: one rule for every terminal table and line (and offered to the reports).

The rule (README, "Reading the output"):
- proportions (rates, shares, precision, AUC, F1 …) as decimals with 3 places, an interval in brackets and the
  count behind it: `0.588 [0.547, 0.627] n=550`; `*` marks an indicative rate (fewer than 30 cases);
- differences signed, their interval as any interval: `+0.056 [-0.018, 0.130]`;
- relative changes as signed percentages: `+8.2 % [-19.0 %, +40.1 %]`;
- small error and divergence statistics (ECE, Brier, log loss, PSI, JS) with 4 places: `0.0123`;
- counts and money with thousands separators (`12,345`; money whole from 100, else 2 places), with an interval
  wherever one exists: `1,234 [1,100, 1,380]`;
- money in the configured currency (`€1,234`, `CHF 1,234`), the symbol on every number of an interval and the
  same decimals inside it as outside: `−€2,134 [−€4,110, −€158]`;
- negative numbers with the minus sign `−` (U+2212), never a hyphen; a value that rounds to zero has no sign (never
  `-0.000`);
- ratios of counts with thousands separators: `487/3,754`;
- p-values with 2 significant digits, `<0.0001` below that; missing values as `—`.
The HTML/Markdown report, the terminal and notification texts all format through these functions.
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
MINUS = "\u2212"
"""The minus sign of every negative number shown to people."""
CURRENCY_SYMBOLS = {"EUR": "€", "USD": "$", "GBP": "£", "JPY": "¥"}
"""Currency codes shown as a symbol; any other code is written before the amount ('CHF 1,234')."""


def fixed(v: float, places: int, signed: bool = False, sep: bool = False) -> str:
    """`v` with `places` decimals, `−` for negatives, `+` for positives when `signed`; a value that rounds to zero
    has no sign (so never '-0.000'); `sep`: thousands separators."""
    body = f"{abs(v):{',' if sep else ''}.{places}f}"
    if float(body.replace(",", "")) == 0:
        return body
    return (MINUS if v < 0 else ("+" if signed else "")) + body


def prop(v: float | None) -> str:
    """A proportion: '0.588' (3 places), '—' when undefined."""
    return MISSING if v is None else fixed(v, PLACES)


def apart(text: str, v: float | None, line: float | None) -> str:
    """`text` (v as printed) with more decimals, up to 8, while it reads as the line itself: a value of 0.8886
    judged against a line of 0.889 printed '0.889 (line < 0.889)', which says the opposite of what was judged."""
    if v is None or line is None or v == line or not text[-1:].isdigit():
        return text
    places = len(text.rsplit(".", 1)[1]) if "." in text else 0
    sep = "," in text
    while places < 8:
        try:
            if float(text.replace(",", "").replace(MINUS, "-")) != round(line, places):
                return text
        except ValueError:  # not a plain number ('3h 20m'): as it is
            return text
        places += 1
        text = fixed(v, places, sep=sep)
    return text


def interval(lo: float | None, hi: float | None, places: int = PLACES) -> str:
    """'[0.547, 0.627]' for a proportion's interval ('[−0.018, 0.130]' for a difference's), '—' when either end is
    undefined."""
    return MISSING if lo is None or hi is None else f"[{fixed(lo, places)}, {fixed(hi, places)}]"


def line(v: float | None) -> str:
    """An agreed line or target as it was written, at least 2 places: '0.70', '0.085', '1500'."""
    if v is None:
        return MISSING
    return f"{v:.2f}" if round(v, 2) == v and abs(v) < 100 else f"{v:g}"


def whole(v: float | None) -> str:
    """A count that a float carries ('2' for 2.0, '1,204'), a fraction as written ('0.5': a line between counts)."""
    if v is None:
        return MISSING
    return count(v) if float(v).is_integer() else f"{v:g}"


def ratio(k: int | float | None, n: int | float | None) -> str:
    """'487/3,754': a count out of a count, both with thousands separators."""
    return f"{count(k)}/{count(n)}"


def counted(n: int | float, noun: str, plural: str | None = None) -> str:
    """'1 event', '2 events', '1,200 labelled positives': a count with its noun in the number's form (tryout: "1
    events of this replay", "~1 days"); `plural` for a noun that does not take an s."""
    return f"{count(n)} {noun if n == 1 else plural or noun + 's'}"


def were(n: int | float) -> str:
    """'was' after a count of 1, else 'were'."""
    return "was" if n == 1 else "were"


def count(n: int | float | None, signed: bool = False) -> str:
    """'12,345' (thousands separators), '−4,516' (the minus sign, never a hyphen), '—' when unknown; `signed`:
    '+1,200' for a difference of counts."""
    return MISSING if n is None else fixed(n, 0, signed=signed, sep=True)


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
    return f"{fixed(d, PLACES, signed=True)}{iv}"


def stat(v: float | None, signed: bool = False) -> str:
    """A small error or divergence statistic (ECE, Brier, log loss, PSI, JS): '0.0123' (`signed`: '+0.0123')."""
    return MISSING if v is None else fixed(v, STAT_PLACES, signed=signed)


def _money_places(*vs: float | None) -> int:
    """Whole from 100, else 2 places; below 1 cent-scale amounts (a cost per prediction) 2 significant digits."""
    m = max(abs(v) for v in vs if v is not None)
    if m >= 100:
        return 0
    return 2 if m >= 0.01 or m == 0 else 1 - _exponent(m)


def currency_symbol(currency: str | None) -> tuple[str, str]:
    """(prefix, suffix) of an amount in `currency`: ('€', ''), ('CHF ', ''); none configured: ('', '')."""
    if not currency:
        return "", ""
    return CURRENCY_SYMBOLS.get(currency, currency + " "), ""


def _amount(v: float, places: int, currency: str | None, signed: bool) -> str:
    pre, post = currency_symbol(currency)
    body = fixed(v, places, signed=signed, sep=True)
    sign = body[0] if body[0] in (MINUS, "+") else ""
    return f"{sign}{pre}{body[len(sign):]}{post}"


def money(v: float | None, lo: float | None = None, hi: float | None = None, signed: bool = False,
          currency: str | None = None) -> str:
    """'€1,234 [€1,100, €1,380]': an amount in the configured currency (whole from 100, else 2 places, the same
    places inside the interval), the interval when given; `signed`: '+€1,234 [−€20, €2,400]'; without a currency
    the bare number."""
    if v is None:
        return MISSING
    d = _money_places(v, lo, hi)
    iv = "" if lo is None or hi is None else f" [{_amount(lo, d, currency, False)}, {_amount(hi, d, currency, False)}]"
    return f"{_amount(v, d, currency, signed)}{iv}"


def money_interval(lo: float | None, hi: float | None, currency: str | None = None, value: float | None = None) -> str:
    """'[−€4,110, −€158]': an amount's interval alone (decimals as `money` gives them with `value`), '—' without."""
    if lo is None or hi is None:
        return MISSING
    return money(value if value is not None else lo, lo, hi, currency=currency).split(" ", 1)[1]


def pvalue(p: float | None) -> str:
    """'0.032', '0.85', '<0.0001', '—': 2 significant digits."""
    if p is None:
        return MISSING
    return "<0.0001" if p < 1e-4 else f"{float(f'{p:.2g}'):.{max(0, 1 - _exponent(p))}f}"


def _exponent(p: float) -> int:
    """Decimal exponent of the leading digit of p > 0 after rounding to 2 significant digits (0.0871 → -2)."""
    m = f"{p:.1e}"
    return int(m.split("e")[1])


def percent(v: float | None, places: int = 1, signed: bool = False) -> str:
    """A share or relative change as a percentage: '50.0 %' ('+5.3 %' signed); for shares of a whole, not rates."""
    if v is None:
        return MISSING
    return f"{fixed(100 * v, places, signed=signed)} %"


def duration(seconds: float | None) -> str:
    """'1.5 d', '3.2 h', '12 min', '45 s'; a whole number of days or hours without '.0' (verification tryout:
    "90.0 d (`labels.horizon`)")."""
    if seconds is None:
        return MISSING
    if seconds >= 86400:
        return f"{_tenths(seconds / 86400)} d"
    if seconds >= 3600:
        return f"{_tenths(seconds / 3600)} h"
    if seconds >= 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"


def _tenths(v: float) -> str:
    """One decimal, dropped when it is 0: '1.5', '90'."""
    text = f"{v:.1f}"
    return text[:-2] if text.endswith(".0") else text


def indicative_used(rates: Any) -> bool:
    """Whether any rate document in a nested structure is marked indicative (so the `*` footnote is needed)."""
    if isinstance(rates, Mapping):
        if rates.get("indicative") is True and rates.get("value") is not None:
            return True
        return any(indicative_used(v) for v in rates.values())
    if isinstance(rates, (list, tuple)):
        return any(indicative_used(v) for v in rates)
    return False
