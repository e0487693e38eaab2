"""unique_ints equals np.unique on integer arrays (the bucket merges' union of bins) and refuses other dtypes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from driftline.core.unique_ints import unique_ints


@settings(max_examples=300, deadline=None)
@given(hnp.arrays(st.sampled_from([np.int32, np.int64, np.uint8, np.int16]), hnp.array_shapes(max_dims=2, max_side=60)))
def test_equals_np_unique(values: np.ndarray) -> None:
    got, want = unique_ints(values), np.unique(values)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want)


def test_concatenated_sorted_runs_as_the_merges_pass_them() -> None:
    rng = np.random.default_rng(3)
    a = np.sort(rng.choice(10**7, 5000, replace=False))
    b = np.sort(rng.choice(10**7, 3000, replace=False))
    both = np.concatenate((a, b, a[:100]))
    assert np.array_equal(unique_ints(both), np.unique(both))


def test_empty_keeps_dtype() -> None:
    got = unique_ints(np.array([], dtype=np.int32))
    assert got.dtype == np.int32 and got.size == 0


def test_refuses_floats() -> None:
    with pytest.raises(TypeError, match="integers"):
        unique_ints(np.array([1.0, np.nan, np.nan]))
