"""The chunk-wide bucket merge's steps without binary searches or per-bucket ranking encodes (issue 18, round
"buckets"): each equals the route it replaces on hostile input."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import driftline.core.encoded_many as encoded_many
from driftline.core.encoded_many import encode_merged
from driftline.core.unique_ints import union_positions, unique_ints

from test_encoded_many import _copies, chunks

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
INTS = st.lists(st.integers(-2**62, 2**62) | st.integers(-5, 40), max_size=60)


@SETTINGS
@given(INTS, INTS, st.booleans())
def test_union_positions_equal_unique_and_searchsorted(a: list[int], b: list[int], sort: bool) -> None:
    """Any int64 values (unsorted, repeated within and across the two arrays, empty): the cells and positions the
    two binary searches gave."""
    x = np.array(sorted(a) if sort else a, dtype=np.int64)
    y = np.array(sorted(b) if sort else b, dtype=np.int64)
    cells, at_x, at_y = union_positions(x, y)
    want = unique_ints(np.concatenate((x, y)))
    assert cells.dtype == want.dtype and cells.tolist() == want.tolist()
    assert at_x.tolist() == np.searchsorted(want, x).tolist()
    assert at_y.tolist() == np.searchsorted(want, y).tolist()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chunks())
def test_chunk_merges_search_no_cells(chunk: tuple[list[Any], list[Any]]) -> None:
    """encode_merged's score cells are placed without np.searchsorted over them (only the n + 1 bucket ends are
    searched)."""
    olds, deltas = chunk
    real_search = np.searchsorted

    def searching(a: Any, v: Any, *args: Any, **kwargs: Any) -> Any:  # the per-bucket fallback routes aside
        if sys._getframe(1).f_code.co_filename == encoded_many.__file__:
            assert np.ndim(v) == 0 or np.size(v) <= len(olds) + 1, "a binary search per score cell"
        return real_search(a, v, *args, **kwargs)

    np.searchsorted = searching  # type: ignore[assignment]
    try:
        with np.errstate(all="ignore"):
            try:
                encode_merged(olds, _copies(deltas))
            except AssertionError:
                raise
            except Exception:  # noqa: BLE001 - malformed stored buckets fail as test_encoded_many checks
                pass
    finally:
        np.searchsorted = real_search  # type: ignore[assignment]
