"""Ranking histograms (core/rank_hist.py): sums against a dict reference on both of rank_sum's routes (sort, dense
grid), the chunk-wide sum against rank_sum bucket by bucket, and a correction that empties a ranking bin through
the store's chunk write."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from driftline.core.encoded import add_encoded
from driftline.core.encoded_many import encode_merged
from driftline.core.grids import N_RANK_BINS
from driftline.core.rank_hist import RANK_ROW, Rank, rank_from_doc, rank_into_doc, rank_sum, ranks_added, stored_rank
from driftline.core.stats import NEG, POS, BucketStats

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def ranks(draw: Any, big: bool = False) -> Rank:
    """Sorted distinct keys, non-zero counts (negative ones too: a batch's delta removes labels); `big` draws
    enough keys (from a few seeds) to take rank_sum's dense route, with many shared keys."""
    if big:
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        keys = np.unique(rng.integers(0, 30_000, 60_000) * draw(st.sampled_from([1, 2, 3])) % RANK_ROW)
        counts = rng.integers(-3, 4, len(keys))
        counts[counts == 0] = 5
        return keys.astype(np.int32), counts.astype(np.int64)
    d = draw(st.dictionaries(st.integers(0, RANK_ROW - 1) | st.sampled_from([0, 5, RANK_ROW - 1]),
                             st.integers(-3, 40).filter(bool), max_size=25))
    keys = sorted(d)
    return np.array(keys, dtype=np.int32), np.array([d[k] for k in keys], dtype=np.int64)


def _dict_sum(parts: list[Rank | None]) -> tuple[list[int], list[int]] | None:
    if any(p is None for p in parts):
        return None
    total: dict[int, int] = {}
    for keys, counts in parts:  # type: ignore[misc]
        for k, c in zip(keys.tolist(), counts.tolist()):
            total[k] = total.get(k, 0) + c
    keys = sorted(k for k, c in total.items() if c)
    return keys, [total[k] for k in keys]


def _lists(r: Rank | None) -> tuple[list[int], list[int]] | None:
    return None if r is None else (r[0].tolist(), r[1].tolist())


@SETTINGS
@given(st.lists(ranks() | ranks(big=True) | st.none(), max_size=6), st.data())
def test_rank_sum_equals_the_dict_sum(parts, data) -> None:
    # the negation of a part cancels it key for key: zero sums must be dropped on both routes
    if parts and parts[0] is not None and data.draw(st.booleans()):
        parts.append((parts[0][0], -parts[0][1]))
    got = rank_sum(parts)
    assert _lists(got) == _dict_sum(parts)
    big = sum(len(p[0]) for p in parts if p is not None) > RANK_ROW // 4
    note(f"dense route: {big}")
    if got is not None:
        assert got[0].dtype == np.int32 and got[1].dtype == np.int64


@SETTINGS
@given(st.lists(st.tuples(ranks() | st.none(), ranks() | st.none(), st.booleans()), max_size=8))
def test_the_chunk_wide_sum_equals_rank_sum_bucket_by_bucket(rows) -> None:
    docs: list[dict[str, Any]] = [{"sums": [0.0] * 9} for _ in rows]
    for doc, (s, _, _) in zip(docs, rows):
        rank_into_doc(doc, s)  # as stored: counts in their narrowest width
    stored = [stored_rank(doc, 0 if s is not None else 1) for doc, (s, _, _) in zip(docs, rows)]
    deltas = [d for _, d, _ in rows]
    got = ranks_added(stored, deltas)
    assert got is not None
    want = [rank_sum((rank_from_doc(doc, 0 if s is not None else 1), d)) for doc, (s, d, _) in zip(docs, rows)]
    assert [_lists(g) for g in got] == [_lists(w) for w in want]


def test_the_chunk_wide_sum_leaves_unsorted_or_zero_stored_counts_to_the_per_bucket_route() -> None:
    keys = np.array([9, 3], dtype=np.int32)
    none = (np.zeros(0, np.int32), np.zeros(0, np.int64))
    assert ranks_added([(keys.tobytes(), np.array([1, 1], np.int64))], [none]) is None
    assert ranks_added([(keys.tobytes(), np.array([1, 1], np.int64))], [None]) == [None]  # unknown
    zero = (np.array([3], np.int32).tobytes(), np.array([0], np.int64))
    assert ranks_added([zero], [none]) is None
    assert ranks_added([(b"", np.zeros(0, np.int64))], [(keys, np.array([1, 1], np.int64))]) is None  # unsorted
    assert stored_rank({}, 2) is None
    assert stored_rank({}, 0)[0] == b"" and not stored_rank({}, 0)[1].size  # type: ignore[index]
    for ri, rc in ((b"\0\0\0", b""), (b"\0" * 4, b""), (b"\0" * 8, b"\0" * 3), (b"\0" * 4, b"\0" * 16), (b"", b"\0")):
        assert stored_rank({"ri": ri, "rc": rc, "rs": [0.0] * 6, "sums": [0.0] * 9}, 0) is None, (ri, rc)
    good = {"ri": np.array([3], np.int32).tobytes(), "rc": np.array([2], np.int16).tobytes(), "sums": [0.5] * 9}
    assert stored_rank(dict(good, rs=[0.5] * 6), 1) is not None
    # written with other labelled sums (an older writer moved labels since), or without them: unknown
    assert stored_rank(dict(good, rs=[0.5] * 5 + [0.25]), 1) is None and stored_rank(good, 1) is None
    assert stored_rank(dict(good, rs=[0.5] * 6, sums=[0.5] * 6 + [9.0] * 3), 1) is not None  # unlabelled rows


def test_counts_are_stored_in_the_narrowest_width_and_read_back() -> None:
    keys = np.array([1, 2, 3], dtype=np.int32)
    for counts, width in (([1, -3, 32767], 2), ([1, -32769, 5], 4), ([2**31, 1, 1], 8), ([-(2**31), 1, 1], 4)):
        doc: dict[str, Any] = {"sums": [1.5] * 9}
        rank_into_doc(doc, (keys, np.array(counts, dtype=np.int64)))
        assert len(doc["rc"]) == 3 * width
        back = rank_from_doc(doc, 1)
        assert back is not None and back[1].tolist() == counts and back[1].dtype == np.int64


def test_a_correction_empties_its_ranking_bin_on_every_write_route() -> None:
    """Stored: two positives in ranking bins 7 and 9; the batch relabels the one in bin 7 negative. The positive
    row's bin 7 goes to zero and must be dropped (not stored as a zero count) by the chunk write, the per-bucket
    write and the decoded sum alike."""
    stored = BucketStats()
    stored.conf[POS, 1] = 2
    stored.rank = (np.array([N_RANK_BINS + 7, N_RANK_BINS + 9], np.int32), np.array([1, 1], np.int64))
    delta = BucketStats()
    delta.conf[POS, 1], delta.conf[NEG, 1] = -1, 1
    delta.rank = (np.array([7, N_RANK_BINS + 7], np.int32), np.array([1, -1], np.int64))
    delta.bins = delta.score_bins()
    data = stored.to_bytes()
    chunk = encode_merged([data, data, None], [delta, delta, delta])
    single = add_encoded(data, delta)
    assert chunk[0] == chunk[1] == single == BucketStats.from_bytes(data).add(delta).to_bytes()
    doc = msgspec.msgpack.decode(single)
    assert np.frombuffer(doc["ri"], np.int32).tolist() == [7, N_RANK_BINS + 9]
    assert np.frombuffer(doc["rc"], np.int16).tolist() == [1, 1]  # little counts: 2 bytes each
