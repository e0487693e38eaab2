"""The batch paths equal their reference rules: whole-batch feature histograms equal the event-by-event rule, and a
stored bucket merged in its encoded form equals decode → add → encode."""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driftline.core.engine import Engine, EngineSettings, JoinView
from driftline.core.grids import N_SCORE_BINS
from driftline.core.moves import _exact_bucket, feature_hists
from driftline.core.encoded import add_encoded
from driftline.core.stats import BucketStats

from helpers import decoded, outcome, pred
from test_engine_properties import T0, assert_same

VALUES = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(-1e9, 1e9, allow_nan=False),
                   st.sampled_from(["FR", "DE", "x" * 250, ""]))
NAMES = st.sampled_from(["a", "b", "c", "d", "e"])


@st.composite
def feature_batches(draw: Any) -> tuple[list[int], list[dict[str, Any]], tuple[str, ...], int]:
    n = draw(st.integers(1, 40))
    buckets = [draw(st.integers(0, 3)) for _ in range(n)]
    uniform = draw(st.booleans())  # the common shape: every event has the same names with one type each
    if uniform:
        dicts = [{"a": draw(st.floats(-1e6, 1e6, allow_nan=False)), "b": draw(st.sampled_from(["x", "y"])),
                  "c": draw(st.booleans())} for _ in range(n)]
    else:
        dicts = [draw(st.dictionaries(NAMES, VALUES, max_size=5)) for _ in range(n)]
    declared = draw(st.sampled_from([(), ("a", "b"), ("a", "b", "c", "d", "e"), ("z",)]))
    max_features = draw(st.sampled_from([50, 2]))
    return buckets, dicts, declared, max_features


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(feature_batches())
def test_batch_feature_histograms_equal_the_event_by_event_rule(case: Any) -> None:
    buckets, dicts, declared, max_features = case
    fast = [BucketStats() for _ in range(4)]
    fast_counts: Counter[tuple[str, str]] = Counter()
    feature_hists(buckets, dicts, declared, max_features, fast, fast_counts)
    ref = [BucketStats() for _ in range(4)]
    ref_counts: Counter[tuple[str, str]] = Counter()
    for b in range(4):
        mine = [d for bb, d in zip(buckets, dicts) if bb == b]
        if mine:
            _exact_bucket(mine, declared, max_features, ref[b], ref_counts)
    assert fast_counts == ref_counts
    for f, r in zip(fast, ref):
        assert_same(f, r)


@st.composite
def stats_pairs(draw: Any) -> tuple[BucketStats, BucketStats]:
    """Two bucket deltas built by the engine from random events (features, slices, labels, delays)."""
    out = []
    for _ in range(2):
        eng = Engine(EngineSettings(slice_features=("country",)), JoinView())
        raws = []
        for i in range(draw(st.integers(0, 12))):
            pid = f"p{draw(st.integers(0, 30))}"
            if draw(st.booleans()):
                raws.append(pred(pid, draw(st.floats(0, 1, allow_nan=False)), T0 + draw(st.integers(0, 3000)),
                                 features={"amount": draw(st.floats(-1e5, 1e5, allow_nan=False)),
                                           "country": draw(st.sampled_from(["FR", "DE", None]))}))
            else:
                raws.append(outcome(pid, draw(st.integers(0, 1)), T0 + draw(st.integers(0, 9000))))
        for d in decoded(raws):
            eng.apply(d)
        res = eng.finish()
        total = BucketStats()
        for delta in res.deltas.values():
            total.add(delta)
        total.expired, total.implicit = draw(st.integers(0, 3)), draw(st.integers(0, 3))
        out.append(total)
    return out[0], out[1]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stats_pairs())
def test_encoded_merge_equals_decode_add_encode(pair: tuple[BucketStats, BucketStats]) -> None:
    stored, delta = pair
    expected = BucketStats.from_bytes(stored.to_bytes()).add(delta)
    assert_same(BucketStats.from_bytes(add_encoded(stored.to_bytes(), delta)), expected)


@st.composite
def engine_deltas(draw: Any) -> list[BucketStats]:
    """The bucket deltas of one engine batch from random predictions and outcomes (labels move predictions out of
    and into label states, so some written score cells sum back to zero), each with its `bins` as Moves.deltas set
    them."""
    eng = Engine(EngineSettings(slice_features=("country",)), JoinView())
    raws = []
    for _ in range(draw(st.integers(0, 20))):
        pid = f"p{draw(st.integers(0, 12))}"
        if draw(st.booleans()):
            raws.append(pred(pid, draw(st.sampled_from([0.0, 0.5, 1.0, 0.3]) | st.floats(0, 1, allow_nan=False)),
                             T0 + draw(st.integers(0, 9000)), features={"amount": draw(st.floats(-10, 10))}))
        else:
            raws.append(outcome(pid, draw(st.integers(0, 1)), T0 + draw(st.integers(0, 9000))))
    for d in decoded(raws):
        eng.apply(d)
    return list(eng.finish().deltas.values())


def _without_bins(b: BucketStats) -> BucketStats:
    out = b.copy()
    out.bins = None
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(engine_deltas(), stats_pairs())
def test_known_score_bins_serialise_and_merge_as_the_dense_scan(deltas: list[BucketStats],
                                                                 pair: tuple[BucketStats, BucketStats]) -> None:
    """The non-zero score bins Moves.deltas hands each delta are the dense scan's, and to_bytes and add_encoded
    with them give the same bytes as without them."""
    stored = pair[0].to_bytes()
    for delta in deltas:
        assert delta.bins is not None
        plain = _without_bins(delta)
        for got, want in zip(delta.score_bins(), plain.score_bins()):
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
        assert delta.to_bytes() == plain.to_bytes()
        assert add_encoded(stored, delta) == add_encoded(stored, plain)
        assert add_encoded(plain.to_bytes(), delta) == add_encoded(plain.to_bytes(), plain)


def test_adding_into_a_delta_forgets_its_known_score_bins():
    """add and add_prediction change hist/psum in place: the bins found before no longer hold."""
    b = BucketStats()
    b.bins = b.score_bins()
    b.add_prediction(1, True, 5, 0.5)
    assert b.bins is None and b.score_bins()[0].tolist() == [N_SCORE_BINS + 5]
    b.bins = b.score_bins()
    b.add(b.copy())
    assert b.bins is None


def test_fresh_zeros_are_zeros_of_their_shape_and_writable():
    """Large delta arrays come from their own anonymous mapping: zeros, the dtype asked for, writable, and views of
    their rows outlive the array they came from."""
    import numpy as np

    from driftline.core.moves import _FRESH_BYTES, _fresh_zeros

    for shape, dtype in [((200, 3, 2611), np.int64), ((200, 3, 2611), np.float64), ((2, 3, 4), np.int64)]:
        a = _fresh_zeros(shape, dtype)
        assert a.shape == shape and a.dtype == dtype and a.flags.writeable and not a.any()
        row = a[1]
        a[1, 2, 1] = 7
        del a
        assert row[2, 1] == 7 and int(row.sum()) == 7
    assert 200 * 3 * 2611 * 8 >= _FRESH_BYTES


def test_fresh_zeros_map_private_memory():
    """The anonymous mapping is private, not mmap's default shared memory (whose page faults cost ~40 % of the
    score step of Moves.deltas): /proc/self/maps shows the array's pages as 'p', not 's'."""
    import os

    import numpy as np
    import pytest

    from driftline.core.moves import _fresh_zeros

    if not os.path.exists("/proc/self/maps"):
        pytest.skip("needs /proc/self/maps (Linux)")
    a = _fresh_zeros((200, 3, 2611), np.int64)
    at = a.__array_interface__["data"][0]
    with open("/proc/self/maps") as fh:
        perms = [line.split()[1] for line in fh
                 if int(line.split("-")[0], 16) <= at < int(line.split()[0].split("-")[1], 16)]
    assert perms == ["rw-p"]


def test_a_bucket_read_with_packed_features_encodes_every_numeric_bin() -> None:
    """to_bytes of a bucket decoded with features="packed" keeps its numeric bins (they are unpacked first)."""
    from driftline.core.stats import BucketStats, FeatureHist

    b = BucketStats()
    b.features["amount"] = FeatureHist({3: 2, 7: 1}, {"x": 1}, 4)
    packed = BucketStats.from_bytes(b.to_bytes(), features="packed")
    assert packed.features["amount"].packed is not None
    assert packed.to_bytes() == b.to_bytes()
