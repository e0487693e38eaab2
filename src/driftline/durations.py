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
                             f"{comma_hint(str(text))}")
        value = float(m.group(1)) * _UNIT_S[m.group(2)]
    if value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"duration must be {'0 or more' if allow_zero else 'positive'}, got {text!r}")
    return value


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
