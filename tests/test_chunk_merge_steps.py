"""The chunk-wide bucket merge's steps without binary searches or per-bucket ranking encodes (issue 18, round
"buckets"): each equals the route it replaces on hostile input, and encode_merged takes them."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import driftline.core.encoded_many as encoded_many
import driftline.core.rank_hist as rank_hist
from driftline.core.encoded_many import encode_merged
from driftline.core.rank_hist import RANK_ROW, _encoded_runs, _pair_sum, _sorted_sum, rank_into_doc
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


def _run(draw: Any) -> list[int]:
    return sorted(set(draw(st.lists(st.integers(0, 3 * RANK_ROW), max_size=40))))


COUNTS = st.integers(-2**63, 2**63 - 1) | st.integers(-3, 3) | st.sampled_from(
    [2**15 - 1, 2**15, -2**15, -2**15 - 1, 2**31 - 1, 2**31, -2**31, -2**31 - 1])


@SETTINGS
@given(st.data())
def test_the_pair_sum_equals_the_sorted_sum(data: Any) -> None:
    """Two strictly increasing runs (as ranks_added concatenates them), counts of every size, sums cancelling or
    wrapping: the keys and sums of _sorted_sum's reduceat."""
    old, new = _run(data.draw), _run(data.draw)
    keys = np.array(old + new, dtype=np.int64)
    counts = np.array(data.draw(st.lists(COUNTS, min_size=len(keys), max_size=len(keys))), dtype=np.int64)
    with np.errstate(all="ignore"):
        got, want = _pair_sum(keys, counts), _sorted_sum(keys, counts)
    assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()
    assert got[1].dtype == want[1].dtype == np.int64


@SETTINGS
@given(st.data())
def test_encoded_runs_equal_rank_into_doc_run_by_run(data: Any) -> None:
    """Runs empty, known or unknown (None), with counts at every width's edges: rank_into_doc's bytes."""
    lens = data.draw(st.lists(st.integers(0, 6), max_size=12))
    ok = data.draw(st.lists(st.booleans(), min_size=len(lens), max_size=len(lens)))
    total = sum(lens)
    local = np.array(data.draw(st.lists(st.integers(0, RANK_ROW - 1), min_size=total, max_size=total)),
                     dtype=np.int32)
    sums = np.array(data.draw(st.lists(COUNTS, min_size=total, max_size=total)), dtype=np.int64)
    ends = np.r_[0, np.cumsum(lens, dtype=np.int64)].tolist()
    got = _encoded_runs(local, sums, ends, ok)
    for k, lo, hi, g in zip(ok, ends, ends[1:], got):
        if not k:
            assert g is None
            continue
        doc: dict[str, Any] = {"sums": [0.0] * 9}
        rank_into_doc(doc, (local[lo:hi], sums[lo:hi]))
        assert g == (doc["ri"], doc["rc"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chunks())
def test_chunk_merges_search_no_cells_and_encode_ranks_chunk_wide(chunk: tuple[list[Any], list[Any]]) -> None:
    """encode_merged's score cells are placed without np.searchsorted over them (only the n + 1 bucket ends are
    searched), the ranking sums take no reduceat, and no known ranking histogram is encoded bucket by bucket."""
    olds, deltas = chunk
    real_search, real_sum, real_into = np.searchsorted, rank_hist._sorted_sum, encoded_many.rank_into_doc

    def searching(a: Any, v: Any, *args: Any, **kwargs: Any) -> Any:  # the per-bucket fallback routes aside
        if sys._getframe(1).f_code.co_filename == encoded_many.__file__:
            assert np.ndim(v) == 0 or np.size(v) <= len(olds) + 1, "a binary search per score cell"
        return real_search(a, v, *args, **kwargs)

    def summing(*args: Any) -> Any:
        assert sys._getframe(1).f_code.co_name != "ranks_added", "ranks_added's reduceat"
        return real_sum(*args)

    def into(doc: Any, rank: Any) -> None:  # a new bucket's (encoded alone, as to_bytes does) aside
        caller = sys._getframe(1).f_code.co_name
        assert rank is None or caller == "_encode_new", "a known ranking histogram encoded bucket by bucket"
        real_into(doc, rank)

    np.searchsorted, rank_hist._sorted_sum, encoded_many.rank_into_doc = searching, summing, into  # type: ignore
    try:
        with np.errstate(all="ignore"):
            try:
                encode_merged(olds, _copies(deltas))
            except AssertionError:
                raise
            except Exception:  # noqa: BLE001 - malformed stored buckets fail as test_encoded_many checks
                pass
    finally:
        np.searchsorted, rank_hist._sorted_sum = real_search, real_sum  # type: ignore[assignment]
        encoded_many.rank_into_doc = real_into  # type: ignore[assignment]
