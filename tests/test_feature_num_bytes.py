"""Numeric feature bins packed where the batch path builds them (FeatureHist.num_bytes, core/feature_hists) encode
exactly as stats._feature_doc packs the `num` dict (frozen below as it was), on dirty feature batches (numbers,
nulls, absent names, mixed columns, declared and repeated names, refusals), and a histogram changed afterwards
forgets them."""

from __future__ import annotations

import struct
from collections import Counter
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings

from driftline.core.moves import feature_hists
from driftline.core.feature_counts import _NATIVE
from driftline.core.stats import BucketStats, FeatureHist, _feature_doc

from test_moves import feature_batches

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _frozen_packed(code: str, values: Any) -> bytes:
    return struct.pack(f"{len(values)}{code}", *values)


def _frozen_feature_doc(fh: FeatureHist) -> list[object]:
    """stats._feature_doc before num_bytes (verbatim)."""
    fh.unpack()
    if not fh.num:
        return [[b"", b""], list(fh.cat.items()), fh.missing]
    try:
        packed = [_frozen_packed("i", fh.num), _frozen_packed("q", fh.num.values())] if _NATIVE else None
    except struct.error:
        packed = None
    if packed is None:
        idx = np.fromiter(fh.num.keys(), dtype=np.int32, count=len(fh.num))
        cnt = np.fromiter(fh.num.values(), dtype=np.int64, count=len(fh.num))
        packed = [idx.tobytes(), cnt.tobytes()]
    return [packed, list(fh.cat.items()), fh.missing]


@SETTINGS
@given(feature_batches())
def test_packed_bins_encode_as_the_num_dicts(case: Any) -> None:
    buckets, dicts, declared, max_features = case
    out = [BucketStats() for _ in range(4)]
    feature_hists(buckets, dicts, declared, max_features, out, Counter())
    for stats in out:
        for fh in stats.features.values():
            plain = FeatureHist(dict(fh.num), dict(fh.cat), fh.missing)
            assert _feature_doc(fh) == _frozen_feature_doc(plain)
            if fh.num_bytes is not None:
                assert fh.num_bytes == tuple(_frozen_feature_doc(plain)[0])  # type: ignore[arg-type]
        plain_stats = stats.copy()
        assert all(fh.num_bytes is None for fh in plain_stats.features.values())
        assert stats.to_bytes() == plain_stats.to_bytes()


def test_a_changed_histogram_forgets_its_packed_bins() -> None:
    out = [BucketStats()]
    feature_hists([0, 0], [{"a": 1.0}, {"a": 2.0}], (), 50, out, Counter())
    fh = out[0].features["a"]
    assert fh.num_bytes is not None
    fh.add(FeatureHist({7: 1}))
    assert fh.num_bytes is None and _feature_doc(fh) == _frozen_feature_doc(FeatureHist(dict(fh.num)))
    fh2 = FeatureHist({}, {}, 0, (np.asarray([3], dtype=np.int32), np.asarray([2], dtype=np.int64)), (b"x", b"y"))
    fh2.unpack()
    assert fh2.num_bytes is None and fh2.num == {3: 2}
    assert FeatureHist({1: 2}, num_bytes=(b"a", b"b")) == FeatureHist({1: 2})  # not part of equality


@SETTINGS
@given(feature_batches())
def test_batch_histograms_build_their_num_dict_only_when_read(case: Any) -> None:
    """The batch path leaves a numeric histogram's dict unbuilt (its bins are in num_bytes): encoding a new bucket
    never builds it, and reading num, adding into it or dropping num_bytes gives the counts the bytes hold."""
    buckets, dicts, declared, max_features = case
    out = [BucketStats() for _ in range(4)]
    feature_hists(buckets, dicts, declared, max_features, out, Counter())
    for stats in out:
        lazy = [fh for fh in stats.features.values() if fh._num is None]
        stats.to_bytes()
        assert all(fh._num is None for fh in lazy)  # encoded from the bytes alone
        for k, fh in enumerate(lazy):
            idx, cnt = fh.num_bytes  # type: ignore[misc]
            want = dict(zip(np.frombuffer(idx, dtype=np.int32).tolist(), np.frombuffer(cnt, dtype=np.int64).tolist()))
            assert want and list(want) == sorted(want)
            if k % 3 == 0:
                assert fh.num == want and fh.num_bytes is not None
            elif k % 3 == 1:
                fh.num_bytes = None  # dropping the bytes builds the dict first
                assert fh.num == want
            else:
                fh.add(FeatureHist({0: 1}))
                want[0] = want.get(0, 0) + 1
                assert fh.num == want and fh.num_bytes is None


def test_uniform_numeric_columns_leave_the_dicts_unbuilt() -> None:
    out = [BucketStats(), BucketStats()]
    feature_hists([0, 1, 0], [{"a": 1.0, "b": "x"}, {"a": 2.5, "b": "y"}, {"a": 1.0, "b": "x"}], (), 50, out,
                  Counter())
    fh = out[0].features["a"]
    assert fh._num is None and fh.num_bytes is not None
    assert FeatureHist(dict(fh.num)) == FeatureHist(fh.num) and fh._num is not None and sum(fh.num.values()) == 2
    assert out[1].features["a"] == FeatureHist(dict(out[1].features["a"].num))
