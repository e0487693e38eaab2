"""Moves.deltas' deltas carry their dense score rows (hist/psum) lazily, built from their sparse `bins` when read
(issue 18): those rows, and everything computed with them, must be bit for bit the rows Moves.deltas used to write
densely, and the store's chunk route must not build them."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driftline.core.encoded import add_encoded
from driftline.core.encoded_many import encode_merged
from driftline.core.grids import N_SCORE_BINS, score_bin
from driftline.core.moves import Moves
from driftline.core.stats import NEG, POS, BucketStats

N_BUCKETS = 5
SCORES = st.sampled_from([0.0, -0.0, 0.5, 1.0, 0.3, float("nan")]) | st.floats(0, 1, allow_nan=False)
MOVES = st.lists(st.tuples(st.integers(0, N_BUCKETS - 2), st.integers(0, 2), st.booleans(), SCORES,
                           st.sampled_from([1, -1])), max_size=40)


def _eager_rows(moves: list[tuple[int, int, bool, float, int]]) -> tuple[np.ndarray, np.ndarray]:
    """The dense (buckets, 3, bins) rows as Moves.deltas wrote them before they were lazy: zeros, with each moved
    cell's bincount of signs and of signed scores written in."""
    hist = np.zeros((N_BUCKETS, 3, N_SCORE_BINS), dtype=np.int64)
    psum = np.zeros((N_BUCKETS, 3, N_SCORE_BINS), dtype=np.float64)
    if moves:
        bk, st_, _, sc, sg = (np.array(c) for c in zip(*moves))
        sc, sg = sc.astype(np.float64), sg.astype(np.float64)
        keys, inv = np.unique(bk * (3 * N_SCORE_BINS) + st_ * N_SCORE_BINS + score_bin(sc), return_inverse=True)
        hist.reshape(-1)[keys] = np.rint(np.bincount(inv, weights=sg)).astype(np.int64)
        psum.reshape(-1)[keys] = np.bincount(inv, weights=sg * sc)
    return hist, psum


def _deltas(moves: list[tuple[int, int, bool, float, int]]) -> list[BucketStats]:
    m = Moves()
    for b, state, flagged, score, sign in moves:
        m.move(b, state, flagged, score, sign)
    return m.deltas(N_BUCKETS, (), 10, Counter())


def _eager(d: BucketStats, hist: np.ndarray, psum: np.ndarray) -> BucketStats:
    """The same delta with its dense rows given (as before), its bins kept."""
    return BucketStats(d.conf.copy(), hist.copy(), psum.copy(), d.sums.copy(), d.delay.copy(), bins=d.bins,
                       rank=d.rank, flag_range=d.flag_range)


def _stored() -> BucketStats:
    """A stored bucket whose psum holds -0.0 and NaN cells (x + 0.0 is not x's bits there)."""
    b = BucketStats()
    b.add_prediction(NEG, False, 7, 0.01)
    b.add_prediction(POS, True, 2000, 0.9)
    b.psum[NEG, 3] = -0.0
    b.psum[POS, 11] = float("nan")
    b.hist[POS, 11] = 1
    return b


def _same_rows(a: BucketStats, b: BucketStats) -> None:
    assert a.hist.dtype == b.hist.dtype and a.hist.shape == b.hist.shape and a.hist.tobytes() == b.hist.tobytes()
    assert a.psum.dtype == b.psum.dtype and a.psum.shape == b.psum.shape and a.psum.tobytes() == b.psum.tobytes()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(MOVES)
def test_lazy_rows_are_the_eager_rows_bit_for_bit(moves: list[Any]) -> None:
    hist, psum = _eager_rows(moves)
    deltas = _deltas(moves)
    assert len(deltas) == N_BUCKETS  # the last bucket never moves: an empty delta
    for k, d in enumerate(deltas):
        assert d.plain_rows()
        eager = _eager(d, hist[k], psum[k])
        assert d.to_bytes() == eager.to_bytes()  # from bins, rows not built
        _same_rows(d, eager)
        assert d.is_empty() == eager.is_empty()
        _same_rows(d.copy(), eager.copy())
        assert d.copy().to_bytes() == eager.copy().to_bytes()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(MOVES)
def test_lazy_deltas_add_and_merge_as_eager_ones(moves: list[Any]) -> None:
    hist, psum = _eager_rows(moves)
    stored = _stored()
    for k, d in enumerate(_deltas(moves)):
        eager = _eager(d, hist[k], psum[k])
        _same_rows(stored.copy().add(d), stored.copy().add(eager))  # lazy rows read by add
        lazy_self = _deltas(moves)[k].add(stored)  # a lazy delta added into: its rows built before bins is reset
        _same_rows(lazy_self, eager.copy().add(stored))
        assert add_encoded(stored.to_bytes(), _deltas(moves)[k]) == add_encoded(stored.to_bytes(), eager)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(MOVES, st.lists(st.booleans(), min_size=N_BUCKETS, max_size=N_BUCKETS))
def test_chunk_route_writes_lazy_deltas_without_building_their_rows(moves: list[Any], has_old: list[bool]) -> None:
    hist, psum = _eager_rows(moves)
    olds = [_stored().to_bytes() if o else None for o in has_old]
    lazy = _deltas(moves)
    eager = [_eager(d, hist[k], psum[k]) for k, d in enumerate(_deltas(moves))]
    assert encode_merged(olds, lazy) == encode_merged(olds, eager)
    assert all(d._hist is None and d._psum is None for d in lazy)  # the chunk route read only the bins


def test_one_lazy_row_is_built_from_bins_when_the_other_is_set() -> None:
    d = _deltas([(1, POS, True, 0.7, 1), (1, NEG, False, 0.2, 1)])[1]
    want = _eager_rows([(1, POS, True, 0.7, 1), (1, NEG, False, 0.2, 1)])
    d.hist = d.hist.copy()  # builds both rows first
    assert d.psum.tobytes() == want[1][1].tobytes()
    e = BucketStats(hist=None, bins=d.bins)
    assert e.hist.tobytes() == want[0][1].tobytes() and not e.psum.any()
