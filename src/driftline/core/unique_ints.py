"""Distinct integers in order, by one sort: numpy ≥ 2.3's np.unique takes a hash-table route for integer arrays
without return_* outputs, which on the scattered bin indices a bucket merge makes is ~15-50× slower than sorting
(14.5 ms against 0.9 ms for 100 k int64; 1.2 s of a 1 M-event replay)."""

from __future__ import annotations

import numpy as np


def unique_ints(values: np.ndarray) -> np.ndarray:
    """The sorted distinct values of an integer array, as np.unique gives them (same dtype, 1-d): a stable sort
    (timsort: linear on the concatenated sorted runs the merges pass) then the first of each run of equals."""
    flat = np.ravel(values)
    if flat.dtype.kind not in "iub":
        raise TypeError(f"unique_ints takes integers, not {flat.dtype}")
    if flat.size == 0:
        return flat.copy()
    ordered = np.sort(flat, kind="stable")
    first = np.empty(ordered.size, dtype=bool)
    first[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    return ordered[first]


def union_positions(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(cells, where a's values are in cells, where b's are) for int64 arrays: cells = unique_ints of both, the
    positions np.searchsorted(cells, a) and np.searchsorted(cells, b) give, found by the one stable sort (linear on
    sorted runs) that numbers the distinct values instead of a binary search per value (issue 18: the chunk-wide
    score-bin merge's two searches were ~13 % of its instructions)."""
    both = np.concatenate((a, b))
    if both.size == 0:
        return both.copy(), np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)
    order = np.argsort(both, kind="stable")
    ordered = both[order]
    first = np.empty(ordered.size, dtype=bool)
    first[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    pos = np.empty(both.size, dtype=np.intp)
    pos[order] = np.cumsum(first) - 1
    return ordered[first], pos[:a.size], pos[a.size:]
