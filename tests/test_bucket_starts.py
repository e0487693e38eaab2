"""`bucket_starts` (numpy floor division over a column) against the engine's rule `int(t // bs) * bs`, bit for bit."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from driftline.core.batch_columns import bucket_starts

TIMES = st.one_of(st.floats(-1e18, 1e18, allow_nan=False), st.floats(0, 4e11, allow_nan=False),
                  st.integers(0, 4 * 10**11).map(float), st.integers(-10**6, 10**6).map(lambda i: i / 7))


@settings(max_examples=300, deadline=None)
@given(st.lists(TIMES, max_size=40), st.sampled_from([1, 7, 60, 3600, 86400, 900, 10**9]))
def test_bucket_starts_equal_the_engine_rule(ts, bs):
    expect = [int(t // bs) * bs for t in ts]
    got = bucket_starts(ts, bs)
    assert got == expect
    assert list(map(type, got)) == list(map(type, expect))


def test_bucket_starts_of_odd_inputs_follow_python():
    """Ints, a float bucket width and huge times take Python's path; its answers (and errors) stay."""
    assert bucket_starts([7, 3601], 3600) == [0, 3600]
    assert bucket_starts([7.5], 2.5) == [7.5]
    assert bucket_starts([2.0**60 + 3], 3600) == [int((2.0**60 + 3) // 3600) * 3600]
    assert bucket_starts([], 3600) == []
