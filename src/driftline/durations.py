"""Durations as the config and the CLI write them ('90s', '30m', '1h', '7d', '2w'): parsed to seconds, bounded
(a window reaches back at most 100 years) and formatted back into compact labels."""

from __future__ import annotations

import re

from .decimal_comma import comma_hint

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|w)\s*$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
MAX_WINDOW_DAYS = 36525
"""The longest window (100 years): a window reaches back from its end, and must stay within the calendar."""
MAX_WINDOW_S = MAX_WINDOW_DAYS * 86400.0


def parse_duration(text: str | int | float, allow_zero: bool = False) -> float:
    """Seconds in a duration such as '90s', '30m', '1h', '7d', '2w' (a bare number is seconds); positive unless
    `allow_zero` (a trigger's `for` and `cooldown`: 0s means none, as in Prometheus)."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        m = _DURATION.match(str(text))
        if not m:
            raise ValueError(f"invalid duration {text!r}: use a number and a unit s/m/h/d/w, e.g. '7d'"
                             f"{comma_hint(str(text)) or duration_hint(str(text))}")
        value = float(m.group(1)) * _UNIT_S[m.group(2)]
    if value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"duration must be {'0 or more' if allow_zero else 'positive'}, got {text!r}")
    return value


_UNIT_WORDS = {"s": ("s", "sec", "secs", "second", "seconds"), "m": ("m", "min", "mins", "minute", "minutes"),
               "h": ("h", "hr", "hrs", "hour", "hours"), "d": ("d", "day", "days"), "w": ("w", "wk", "wks", "week",
                                                                                    "weeks")}


def duration_hint(text: str) -> str:
    """" (did you mean '30d'?)" for a duration written with a unit word or capital ('30 days', '7D', '1min',
    '1 week'), " (7 what? …)" for a number without a unit; '' otherwise. Tryout: `horizon: 30 days` and `window: 7`
    were refused with the format only."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", text)
    if m is None:
        return ""
    number, word = m.group(1), m.group(2).lower()
    if m.group(2) == "M" or word in ("mo", "mon", "month", "months", "y", "yr", "year", "years"):
        return " (months and years have no fixed length: write days or weeks, e.g. 30d, 365d)"
    if not word:
        return f" ({number} what? add a unit: {number}s, {number}m, {number}h, {number}d or {number}w)"
    unit = next((u for u, words in _UNIT_WORDS.items() if word in words), None)
    return f" (did you mean '{number}{unit}'?)" if unit else ""


def window_too_long(field: str, text: str) -> None:
    """Raise ValueError naming `field` when the window `text` is longer than MAX_WINDOW_DAYS."""
    if parse_duration(text) > MAX_WINDOW_S:
        raise ValueError(f"{field}: {text} is longer than {MAX_WINDOW_DAYS}d (100 years)")


def format_duration(seconds: float) -> str:
    """Compact label for a duration ('7d', '1h', '90s'), used in metric labels and reports."""
    for unit in ("w", "d", "h", "m"):
        n = seconds / _UNIT_S[unit]
        if n >= 1 and float(n).is_integer() and not (unit == "w" and seconds % 86400 == 0):
            return f"{int(n)}{unit}"
    return f"{int(seconds)}s" if float(seconds).is_integer() else f"{seconds}s"
