"""A bucket's feature histograms as stored apart from its other statistics (the `bucket_features` table, migration
0013_featapart): a msgpack map of feature name → [packed numeric fine bins, category counts, missing], each entry
what BucketStats.to_bytes wrote under "f" before. A batch's label moves change no feature histogram, so keeping them
apart spares every such bucket write (99.5 % of the stored buckets a batch touches) reading and rewriting them, and
the metrics queries, which never use them, reading them."""

from __future__ import annotations

import struct
from typing import Any

import msgspec
import numpy as np

from .feature_counts import _NATIVE, FeatureHist, _feature_doc, _num_dict, _packed
from .grids import N_FEATURE_BINS

_decode = msgspec.msgpack.decode
_encode = msgspec.msgpack.encode


def encode_features(features: dict[str, FeatureHist]) -> bytes:
    """The stored form of a bucket's feature histograms."""
    return _encode({k: _feature_doc(fh) for k, fh in features.items()})


def features_from_doc(feats: dict[str, Any], features: bool | str = True) -> dict[str, FeatureHist]:
    """Feature histograms from their decoded stored form; `features="packed"` leaves numeric counts as arrays for a
    fast `stats.merge`, False reads none."""
    out: dict[str, FeatureHist] = {}
    for k, (num, cat, missing) in (feats.items() if features else ()):
        if features == "packed" and _is_packed(num):
            packed = (np.frombuffer(num[0], dtype=np.int32), np.frombuffer(num[1], dtype=np.int64))
            out[k] = FeatureHist({}, dict(cat), int(missing), packed)
        else:
            out[k] = FeatureHist(_num_dict(num), dict(cat), int(missing))
    return out


def decode_features(data: bytes | None, features: bool | str = True) -> dict[str, FeatureHist]:
    """features_from_doc of stored bytes (None: the bucket has no feature histograms)."""
    return {} if data is None or not features else features_from_doc(_decode(data), features)


def merged_features(old: bytes | None, features: dict[str, FeatureHist]) -> bytes:
    """Stored feature histograms plus a delta's, re-encoded (the same entries, in the same order, as BucketStats
    .add then to_bytes would write them); the stored ones decoded whole only when written in an older form."""
    if old is None:
        return encode_features(features)
    feats = _decode(old)
    if any(not _is_packed(num) for num, _, _ in feats.values()):  # an older encoding: the general route
        stored = features_from_doc(feats)
        for name, fh in features.items():
            mine = stored.get(name)
            if mine is None:
                stored[name] = fh
            else:
                mine.add(fh)
        return encode_features(stored)
    add_features(feats, features)
    return _encode(feats)


def add_features(feats: dict[str, Any], features: dict[str, FeatureHist]) -> None:
    """A delta's feature histograms added into decoded stored ones (packed numeric bins) in place."""
    for name, fh in features.items():
        old = feats.get(name)
        if old is None:
            feats[name] = _feature_doc(fh)
            continue
        fh.unpack()
        if fh.num:
            old[0] = _add_feature_bins(old[0][0], old[0][1], fh.num)
        if fh.cat:
            cat = dict(old[1])
            for c, v in fh.cat.items():
                cat[c] = cat.get(c, 0) + v
            old[1] = list(cat.items())
        old[2] = int(old[2]) + fh.missing


def _is_packed(num: object) -> bool:
    """Whether a stored numeric part is the packed (int32 bins, int64 counts) pair _feature_doc writes."""
    return isinstance(num, list) and len(num) == 2 and isinstance(num[0], bytes)


def _add_feature_bins(idx_b: bytes, cnt_b: bytes, num: dict[int, int]) -> list[bytes]:
    """Stored packed fine-bin counts plus a delta's, re-packed (non-zero bins in index order), with Python ints on
    the few bins involved; the dense numpy route when a bin is out of range, repeated, or a sum leaves int64."""
    idx, cnt = np.frombuffer(idx_b, dtype=np.int32).tolist(), np.frombuffer(cnt_b, dtype=np.int64).tolist()
    merged = dict(zip(idx, cnt))
    if _NATIVE and len(merged) == len(idx) and all(type(k) is int and 0 <= k < N_FEATURE_BINS for k in num) and (
            not idx or (min(idx) >= 0 and max(idx) < N_FEATURE_BINS)):
        for k, v in num.items():
            merged[k] = merged.get(k, 0) + v
        keys = sorted(k for k, v in merged.items() if v)
        try:
            return [_packed("i", keys), _packed("q", [merged[k] for k in keys])]
        except struct.error:
            pass
    dense = np.zeros(N_FEATURE_BINS, dtype=np.int64)
    dense[np.frombuffer(idx_b, dtype=np.int32)] = np.frombuffer(cnt_b, dtype=np.int64)
    dense[np.fromiter(num.keys(), dtype=np.int64, count=len(num))] += np.fromiter(
        num.values(), dtype=np.int64, count=len(num))
    fnz = np.flatnonzero(dense)
    return [fnz.astype(np.int32).tobytes(), dense[fnz].tobytes()]
