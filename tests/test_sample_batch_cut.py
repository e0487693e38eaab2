"""The batch-wide steps of the sample recording (issue 18) against the per-bucket rules they replace: each bucket's
`distinct` flag, found for the whole batch from one cumulative count of equal neighbouring hashes, is
distinct_within of its candidates; a column that sampled_column says holds no None holds none; BatchColumns.cut (names sorted and None-free columns found once per batch) is a
verbatim frozen copy of bucket_columns; and batch_columns stores the frozen row route's bytes, also merged into
stored samples (truncated or not), when hashes tie between different ids, at the extreme hash values, and in
buckets with fewer or more than k predictions. Run with CI=true as well (derandomized examples)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any
from unittest import mock

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import driftline.ingest.sampling as sampling
from driftline.core.engine import EngineSettings, JoinView
from driftline.core.sample import MAX_TAU, Value, sample_values, sampled_column
from driftline.core.sample_columns import BatchColumns, SampleColumns, distinct_within, encoded, merged_encoded
from driftline.ingest.isolation import apply_isolating

import test_sample_columns
from test_sample_columns import VALUES, _outcome, dirty_events, frozen_batch_samples, ref_merged, stored_blobs
from test_sample_engine_columns import engine_batches

EDGES = [0, 1, 2**32, 2**63, MAX_TAU - 1, MAX_TAU]
"""The hash values a coarse hash maps ids to: ties between different ids, and the ends of the range."""


def coarse_hashes(ids: Iterable[str]) -> np.ndarray:
    """A stand-in for id_hashes whose values tie across different ids (blake2b's never do in practice)."""
    return np.array([EDGES[hashlib.blake2b(i.encode("utf-8", "surrogatepass")).digest()[0] % len(EDGES)]
                     for i in ids], dtype=np.uint64)


def _hashing(coarse: bool) -> Any:
    """A context in which sampling and the frozen reference hash ids with coarse_hashes (or as they do)."""
    if not coarse:
        return mock.patch.object(sampling, "id_hashes", sampling.id_hashes)
    patcher = mock.patch.multiple(sampling, id_hashes=coarse_hashes)
    other = mock.patch.multiple(test_sample_columns, id_hashes=coarse_hashes)

    class Both:
        def __enter__(self) -> None:
            patcher.__enter__()
            other.__enter__()

        def __exit__(self, *exc: Any) -> None:
            other.__exit__(*exc)
            patcher.__exit__(*exc)

    return Both()


def frozen_bucket_columns(tau: int, hashes: list[int], names: Sequence[str], cols: Sequence[list[Value | None]],
                          lo: int, hi: int) -> SampleColumns:
    """Verbatim copy of sample_columns.bucket_columns (main 603e4d7), renamed."""
    n = hi - lo
    parts = sorted((name, col[lo:hi]) for name, col in zip(names, cols))  # names are distinct: no list compared
    kept = [(name, col) for name, col in parts if col.count(None) < n]
    return SampleColumns(tau, hashes, [name for name, _ in kept], [col for _, col in kept])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(engine_batches().map(lambda c: ("engine", c)), dirty_events().map(lambda c: ("dicts", c))),
       st.sampled_from([1, 2, 3, 5, 256]), st.booleans())
def test_each_buckets_distinct_flag_is_distinct_within(case: Any, k: int, coarse: bool) -> None:
    """For every bucket, the flag found batch-wide equals distinct_within of its candidates' hashes, k and
    threshold (repeated ids, ties between ids, cut and uncut buckets, with and without the engine's columns)."""
    kind, data = case
    if kind == "engine":
        ok, s = data
        events = [d for d, _ in ok]
        got = _outcome(lambda: apply_isolating(s, ok, JoinView))
        columns = None if got[0] == "raised" or got[1][1] else got[1][0].feature_columns
    else:
        events, declared, most = data
        s, columns = EngineSettings(declared_features=declared, max_features=most), None
    with _hashing(coarse):
        for features in {id(columns): columns, 0: None}.values():
            _, chosen, _, _ = sampling._candidates(s, events, k, features)
            for _, hl, idx, tau, distinct in chosen:
                assert len(hl) == len(idx) >= 1
                assert distinct == distinct_within(hl, k, tau), (hl, k, tau)


COLUMN = st.lists(st.one_of(st.none(), st.floats(allow_nan=False), st.sampled_from(["FR", "", "x" * 64])),
                  min_size=0, max_size=12)


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "c", "Z", "aa", "", "é"]), unique=True, max_size=5), st.data())
def test_batch_cut_is_the_frozen_bucket_columns(names: list[str], data: Any) -> None:
    """Every cut of a batch's columns (names in any order, columns with and without None, rows without any value)
    is bucket_columns' sample: same names, columns, order and encoding."""
    n = data.draw(st.integers(1, 12))
    nones = data.draw(st.sampled_from([0.0, 0.3, 1.0]))
    cols = [[None if data.draw(st.floats(0, 1)) < nones else data.draw(st.floats(allow_nan=False, width=32))
             for _ in range(n)] for _ in names]
    batch = BatchColumns.of(names, cols)
    lo = data.draw(st.integers(0, n - 1))
    hi = data.draw(st.integers(lo + 1, n))
    hashes = list(range(hi - lo))
    tau = data.draw(st.sampled_from([MAX_TAU, hi - lo]))
    got, want = batch.cut(tau, hashes, lo, hi), frozen_bucket_columns(tau, hashes, names, cols, lo, hi)
    assert got == want and got.encode() == want.encode()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(engine_batches(), st.sampled_from([1, 2, 5, 256]), st.booleans(), st.lists(stored_blobs(), min_size=1,
                                                                                   max_size=3))
def test_batch_columns_store_the_frozen_bytes_under_tied_hashes(case: Any, k: int, coarse: bool,
                                                                olds: list[bytes]) -> None:
    """batch_columns (with the engine's columns and without) gives the frozen row route's bytes per bucket, and
    merged into a stored sample (often already truncated: tau below some batch hashes) the frozen merge's."""
    ok, s = case
    got = _outcome(lambda: apply_isolating(s, ok, JoinView))
    columns = None if got[0] == "raised" or got[1][1] else got[1][0].feature_columns
    events = [d for d, _ in ok]
    with _hashing(coarse):
        ref = _outcome(lambda: frozen_batch_samples(s, events, k))
        routes = [_outcome(lambda: sampling.batch_columns(s, events, k, columns)),
                  _outcome(lambda: sampling.batch_columns(s, events, k))]
    for fast in routes:
        assert fast[0] == ref[0]
        if ref[0] == "raised":
            assert fast[1] == ref[1]
            continue
        assert list(fast[1]) == list(ref[1])
        for i, (key, want) in enumerate(ref[1].items()):
            assert encoded(fast[1][key]) == encoded(want)
            old = olds[i % len(olds)]
            assert merged_encoded(old, fast[1][key], k) == ref_merged(old, want, k)


@settings(max_examples=800, deadline=None)
@given(st.one_of(st.lists(VALUES, max_size=12),
                 st.lists(st.one_of(st.none(), st.floats()), max_size=12),
                 st.lists(st.one_of(st.none(), st.integers(-2**70, 2**70)), max_size=12),
                 st.lists(st.one_of(st.none(), st.booleans()), max_size=12),
                 st.lists(st.one_of(st.none(), st.sampled_from(["FR", "x" * 70])), max_size=12)))
def test_a_column_said_to_hold_no_none_holds_none(vals: list[Any]) -> None:
    """sampled_column gives sample_values' column (or its error), and says "no None" only of a column without one
    (nulls, NaN, infinities, odd objects, mixed types: may hold one); cut with those flags, every bucket is the
    frozen bucket_columns' sample."""
    want = _outcome(lambda: sample_values(vals))
    got = _outcome(lambda: sampled_column(vals))
    assert got[0] == want[0]
    if want[0] == "raised":
        assert got[1] == want[1]
        return
    col, may = got[1]
    assert col == want[1] and [type(v) for v in col] == [type(v) for v in want[1]]
    assert may or None not in col
    if not col:
        return
    other = [None if i % 3 else 1.0 for i in range(len(col))]
    flags = [may, True]
    batch = BatchColumns.of(["z", "a"], [col, other], flags)
    for lo in range(len(col)):
        for hi in range(lo + 1, len(col) + 1):
            assert batch.cut(MAX_TAU, list(range(hi - lo)), lo, hi) == frozen_bucket_columns(
                MAX_TAU, list(range(hi - lo)), ["z", "a"], [col, other], lo, hi)
