"""rank_hist.in_order (the check that lets a window's sum and a batch's ranking merge take their fast routes) gives
the answer of its reference rule on any input: indexes in [0, size) and strictly increasing within each bucket."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from driftline.core.rank_hist import in_order


def _reference(idx: np.ndarray, sizes: list[int], size: int) -> bool:
    """The rule as first written: the per-bucket indexes offset by bucket·size must rise at every step."""
    if not idx.size:
        return True
    if int(idx.min()) < 0 or int(idx.max()) >= size:
        return False
    flat = idx.astype(np.int64) + np.repeat(np.arange(len(sizes), dtype=np.int64) * size, sizes)
    return bool((np.diff(flat) > 0).all())


@st.composite
def _buckets(draw: st.DrawFn) -> tuple[np.ndarray, list[int], int]:
    size = draw(st.integers(1, 40))
    parts = draw(st.lists(st.one_of(
        st.sets(st.integers(0, size - 1)).map(sorted),  # as the writers store them
        st.lists(st.integers(-2, size + 1), max_size=6)), max_size=8))  # anything: repeats, disorder, range
    dtype = draw(st.sampled_from([np.int32, np.int64, np.uint32]))
    flat = [v for p in parts for v in p]
    if dtype is np.uint32:
        flat = [v % size for v in flat]
    return np.array(flat, dtype=dtype), [len(p) for p in parts], size


@settings(max_examples=400, deadline=None)
@given(_buckets())
def test_in_order_answers_as_the_reference_rule(case):
    idx, sizes, size = case
    assert in_order(idx, sizes, size) == _reference(idx, sizes, size)


def test_a_step_down_inside_a_bucket_is_refused_and_across_buckets_allowed():
    assert in_order(np.array([1, 5, 0, 2], dtype=np.int32), [2, 2], 6)
    assert not in_order(np.array([1, 5, 0, 2], dtype=np.int32), [3, 1], 6)
    assert not in_order(np.array([3, 3], dtype=np.int32), [2], 6)
    assert in_order(np.array([3, 3], dtype=np.int32), [0, 1, 0, 1, 0], 6)
