"""moves.stable_order equals np.argsort(kind="stable") on any int64 keys (distinct or tied, narrow or wide ranges,
negative), and a batch's distinct sequence numbers are placed by counting, not sorted."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from driftline.core import moves
from driftline.core.moves import stable_order


@st.composite
def key_arrays(draw: Any) -> np.ndarray:
    n = draw(st.integers(0, 400))
    shape = draw(st.sampled_from(["distinct", "ties", "wide", "runs"]))
    lo = draw(st.integers(-10**6, 10**6))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    if shape == "distinct":  # a permutation of a narrow range with gaps: the counting route
        span = n * draw(st.integers(1, 20)) + 1
        keys = rng.choice(span, size=min(n, span), replace=False) + lo
    elif shape == "ties":
        keys = rng.integers(lo, lo + max(1, n // 3), size=n)
    elif shape == "wide":
        keys = rng.integers(-2**62, 2**62, size=n)
    else:  # concatenated ascending runs, as the engine's move columns are
        cuts = sorted(rng.integers(0, n + 1, size=3).tolist())
        base = rng.choice(4 * n + 1, size=n, replace=False) + lo
        keys = np.concatenate([np.sort(part) for part in np.split(base, cuts)])
    return np.asarray(keys, dtype=np.int64)


@settings(max_examples=400, deadline=None)
@given(key_arrays())
def test_stable_order_is_the_stable_argsort(keys: np.ndarray) -> None:
    got = stable_order(keys)
    want = np.argsort(keys, kind="stable")
    assert got.dtype == want.dtype
    assert np.array_equal(got, want)


def test_distinct_narrow_keys_are_counted_not_sorted(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(7)
    keys = np.concatenate([np.arange(0, 40000, 4), np.arange(2, 40000, 4), np.arange(3, 40000, 4)])
    keys = keys[rng.permutation(len(keys))][:20000]
    want = np.argsort(keys, kind="stable")

    def refused(*args: Any, **kwargs: Any) -> np.ndarray:
        raise AssertionError("sorted instead of counted")

    monkeypatch.setattr(moves.np, "argsort", refused)
    assert np.array_equal(stable_order(keys), want)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=200), st.integers(0, 2**32 - 1))
def test_ranks_from_known_fine_bins_equal_their_own(scores: list[float], seed: int) -> None:
    """batch_ranks given the moves' score_bin (as Moves.deltas shares it) equals batch_ranks binning them itself."""
    from driftline.core.grids import rank_bin, score_bin
    from driftline.core.rank_hist import batch_ranks

    rng = np.random.default_rng(seed)
    n = len(scores)
    score = np.asarray(scores, dtype=np.float64)
    bucket = rng.integers(0, 4, size=n)
    state = rng.integers(0, 3, size=n)
    sign = rng.choice([-1.0, 1.0], size=n)
    fine = score_bin(score)
    assert np.array_equal(rank_bin(score, fine), rank_bin(score))
    for (k1, c1), (k2, c2) in zip(batch_ranks(4, bucket, state, score, sign, fine),
                                  batch_ranks(4, bucket, state, score, sign), strict=True):
        assert np.array_equal(k1, k2) and k1.dtype == k2.dtype
        assert np.array_equal(c1, c2) and c1.dtype == c2.dtype
