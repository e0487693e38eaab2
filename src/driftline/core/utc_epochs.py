"""Epoch seconds of many UTC datetimes at once, exactly as `datetime.timestamp` gives them, for decode_many's clean
runs: `timestamp` builds a timedelta and divides Python ints per call (~2,400 instructions an event, the costliest
step of a clean run after msgspec's own parse).

msgspec writes the datetimes as RFC 3339 text in one C call (~220 instructions each); when every one comes out in
the same fixed layout ending in `Z` (offset 0: what `timestamp` subtracts is 0 too), the fields are read as columns
of digits and the microseconds since the epoch added up in int64. `timestamp` returns those microseconds divided by
10**6 as a correctly rounded int division; below 2**53 they are exact as a float, so the float division gives the
same float bit for bit. Anything else (numbers, naive or offset datetimes, mixed layouts, times past 2**53 µs, about
the year 2255) gives None and the caller keeps `timestamp`. Pure functions: no IO, no clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import numpy as np

_ENCODE = msgspec.json.Encoder().encode
_EXACT_US = 2 ** 53
"""Microseconds below this in magnitude are exact as a float64."""


def _layout(fraction: bool) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(bytes per item, columns of the separators, their bytes, columns of the digits, the digits' place values)
    of `"YYYY-MM-DDTHH:MM:SS[.ffffff]Z",`: the place values are a matrix whose five rows, multiplied with an item's
    digits, give its year, month, day, second of the day and microsecond."""
    sample = b'"2000-01-01T00:00:00.000000Z",' if fraction else b'"2000-01-01T00:00:00Z",'
    cols = [i for i, c in enumerate(sample[:-1]) if not 0x30 <= c <= 0x39]  # the last column: "," or "]"
    digits = [i for i, c in enumerate(sample) if 0x30 <= c <= 0x39]
    fields = [(1, 1000, 0), (2, 100, 0), (3, 10, 0), (4, 1, 0), (6, 10, 1), (7, 1, 1), (9, 10, 2), (10, 1, 2),
              (12, 36000, 3), (13, 3600, 3), (15, 600, 3), (16, 60, 3), (18, 10, 3), (19, 1, 3)]
    fields += [(21 + k, 10 ** (5 - k), 4) for k in range(6)] if fraction else []
    places = np.zeros((5, len(digits)), dtype=np.float64)
    for col, place, row in fields:
        places[row, digits.index(col)] = place
    return (len(sample), np.array(cols), np.frombuffer(sample, dtype=np.uint8)[cols], np.array(digits), places)


_LAYOUTS = {layout[0]: layout for layout in map(_layout, (True, False))}


def utc_epochs(stamps: Sequence[Any]) -> np.ndarray | None:
    """`[datetime.timestamp(s) for s in stamps]` as a float64 array when every stamp is a datetime at UTC offset 0
    written in one layout (all with microseconds or all without) within ±2**53 µs of the epoch; else None."""
    n = len(stamps)
    if not n:
        return None
    text = _ENCODE(stamps)
    size = (len(text) - 1) // n
    layout = _LAYOUTS.get(size)
    if layout is None or len(text) != size * n + 1:
        return None
    _, cols, seps, digit_cols, places = layout
    rows = np.frombuffer(text, dtype=np.uint8, offset=1).reshape(n, size)
    if not (rows[:, cols] == seps).all():  # every item in the layout: a shifted one breaks the first that differs
        return None
    # one matrix product reads every field (exact: integer sums far below 2**53), each field a contiguous row
    digits = rows[:, digit_cols].astype(np.float64) - 48.0
    year, month, day, sod, us = (places @ digits.T).astype(np.int64)
    days = _YEAR_START.take(year) + _MONTH_START.take(_LEAP.take(year) + month) + day  # (tables: no divisions)
    total = (days * 86400 + sod) * 1000000 + us
    if int(np.abs(total).max()) >= _EXACT_US:
        return None
    return total.astype(np.float64) / 1e6  # type: ignore[no-any-return]


def days_from_civil(year: np.ndarray, month: np.ndarray, day: np.ndarray) -> np.ndarray:
    """Days from 1970-01-01 of each proleptic Gregorian date (H. Hinnant's days_from_civil; years 1..9999)."""
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * np.where(month > 2, month - 3, month + 9) + 2) // 5 + day - 1
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468  # type: ignore[no-any-return]


_YEARS = np.arange(10000, dtype=np.int64)
_YEAR_START = days_from_civil(_YEARS, np.ones_like(_YEARS), np.ones_like(_YEARS)) - 1
"""Days from 1970-01-01 to the day before January 1st of each year 0..9999 (the day is added to it)."""
_LEAP = np.where((_YEARS % 4 == 0) & ((_YEARS % 100 != 0) | (_YEARS % 400 == 0)), 13, 0)
"""Per year, where its months' starts begin in `_MONTH_START`: 13 for a leap year."""
_MONTH_START = np.array([0, 0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334,
                         0, 0, 31, 60, 91, 121, 152, 182, 213, 244, 274, 305, 335], dtype=np.int64)
"""Days of the year before each month 1..12 (index 0 unused), a common year's then a leap year's."""


__all__ = ["days_from_civil", "utc_epochs"]
