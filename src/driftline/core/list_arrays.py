"""numpy arrays of Python lists of numbers, written by one struct.pack_into call: struct converts each item with
PyFloat_AsDouble / PyLong_AsLongLong (~25 instructions an item), where np.fromiter packs each one through numpy's
generic PyArray_Pack (~170 instructions an item, plus the iterator's). Same values; whatever struct refuses (an
item that is not a number of the kind, an int out of range) goes to np.fromiter, which converts or raises as
before."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import numpy as np


def _packed(vals: Sequence[Any], code: str, dtype: type) -> np.ndarray:
    """np.fromiter(vals, dtype=dtype, count=len(vals)), packed by struct with format `code` when it accepts every
    item, in a writable array."""
    n = len(vals)
    out = np.empty(n, dtype=dtype)
    try:
        struct.pack_into(f"{n}{code}", out, 0, *vals)
    except struct.error:
        return np.fromiter(vals, dtype=dtype, count=n)
    return out


def f64(vals: Sequence[Any]) -> np.ndarray:
    """np.fromiter(vals, dtype=np.float64, count=len(vals)) of a list of floats (or ints, bools): the same doubles
    (a float's own; float(x) of an int, correctly rounded, as numpy converts it), in a writable array."""
    return _packed(vals, "d", np.float64)


def i64(vals: Sequence[Any]) -> np.ndarray:
    """np.fromiter(vals, dtype=np.int64, count=len(vals)) of a list of ints (or bools), in a writable array; a
    float (which numpy truncates) or an int out of int64 (OverflowError) goes through np.fromiter."""
    return _packed(vals, "q", np.int64)


__all__ = ["f64", "i64"]
