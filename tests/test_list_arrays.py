"""core/list_arrays: f64/i64 of Python lists (one struct.pack_into) give exactly np.fromiter's arrays, or raise
what it raises, on dirty lists (NaN, infinities, -0.0, huge ints, bools, None, strings, numpy scalars, mixes), and
take struct's route for plain lists."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from driftline.core import list_arrays
from driftline.core.list_arrays import f64, i64

ITEMS = st.one_of(
    st.floats(), st.floats(allow_nan=False, allow_infinity=False).map(lambda x: -x),
    st.integers(-2**70, 2**70), st.integers(-10**400, 10**400), st.booleans(), st.none(),
    st.sampled_from(["1.5", "x", "", "nan"]), st.floats(-1e9, 1e9).map(np.float64),
    st.integers(-2**63, 2**63 - 1).map(np.int64))
LISTS = st.one_of(st.lists(ITEMS, max_size=30), st.lists(st.floats(), max_size=30),
                  st.lists(st.integers(-2**63, 2**63 - 1), max_size=30))


def _outcome(make: Any, vals: list[Any]) -> tuple[str, bytes | type]:
    try:
        return "ok", make(vals).tobytes()
    except Exception as err:  # noqa: BLE001 - the exception type is compared
        return "raised", type(err)


@settings(max_examples=600, deadline=None)
@given(LISTS)
def test_f64_equals_fromiter(vals: list[Any]) -> None:
    assert _outcome(f64, vals) == _outcome(lambda v: np.fromiter(v, dtype=np.float64, count=len(v)), vals)


@settings(max_examples=600, deadline=None)
@given(LISTS)
def test_i64_equals_fromiter(vals: list[Any]) -> None:
    assert _outcome(i64, vals) == _outcome(lambda v: np.fromiter(v, dtype=np.int64, count=len(v)), vals)


def test_plain_lists_take_the_struct_route_and_stay_writable(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("np.fromiter called")
    monkeypatch.setattr(list_arrays.np, "fromiter", refused)
    a, b = f64([1.5, -0.0, 3, True, float("nan")]), i64([1, -2**63, True, 2**63 - 1])
    a[0] += 1.0
    b[0] += 1
    assert a.dtype == np.float64 and a[:4].tolist() == [2.5, -0.0, 3.0, 1.0] and np.isnan(a[4])
    assert b.dtype == np.int64 and b.tolist() == [2, -2**63, 1, 2**63 - 1]
    assert f64([]).shape == (0,) and i64([]).dtype == np.int64
