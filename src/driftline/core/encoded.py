"""Reads and sums on encoded buckets (BucketStats.to_bytes) without decoding them whole: the prediction count and
label delays of many buckets (listing models, label maturity), and a stored bucket plus a batch's delta (the
store's read-modify-write of a bucket, once per batch and bucket)."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from .flag_range import range_from_doc, range_into_doc, range_sum
from .grids import N_DELAY_BINS
from .rank_hist import labelled_in_conf, rank_from_doc, rank_into_doc, rank_sum
from .feature_blob import add_features
from .slice_bound import add_lists, bounded
from .stats import BucketStats, _zeros_i
from .unique_ints import unique_ints


class _Counts(msgspec.Struct):
    """The parts of an encoded bucket that say how many predictions and which label delays (the rest skipped)."""

    conf: list[int]
    di: bytes
    dc: bytes


_counts_dec = msgspec.msgpack.Decoder(_Counts)


def encoded_counts(data: bytes) -> tuple[int, bytes, bytes]:
    """(predictions, delay bin indexes, delay counts) of an encoded bucket, without decoding its score and
    feature histograms: listing models and label maturity read every bucket of a model (see delay_sum)."""
    doc = _counts_dec.decode(data)
    return int(sum(doc.conf)), doc.di, doc.dc


def delay_sum(indexes: list[bytes], counts: list[bytes]) -> np.ndarray:
    """The label-delay histogram summed over many buckets' (indexes, counts) parts, in one numpy pass."""
    delay = _zeros_i(N_DELAY_BINS)
    np.add.at(delay, np.frombuffer(b"".join(indexes), dtype=np.int32),
              np.frombuffer(b"".join(counts), dtype=np.int64))
    return delay


def add_encoded(data: bytes, delta: BucketStats) -> bytes:
    """`BucketStats.from_bytes(data).add(delta).to_bytes()` without building dense or dict forms of the stored
    bucket: the sparse score bins, packed feature bins and counts are summed as they are stored (the store's
    read-modify-write of a bucket, once per batch and bucket)."""
    doc = msgspec.msgpack.decode(data)
    feats = doc["f"]
    if any(not (isinstance(num, list) and len(num) == 2 and isinstance(num[0], bytes)) for num, _, _ in
           feats.values()):
        return BucketStats.from_bytes(data).add(delta).to_bytes()  # an older encoding: the general route
    stored = rank_from_doc(doc, labelled_in_conf(doc["conf"]))  # read before conf and sums change
    stored_range = range_from_doc(doc, sum(doc["conf"]))
    doc["conf"] = (np.asarray(doc["conf"], dtype=np.int64) + delta.conf.ravel()).tolist()
    doc["sums"] = (np.asarray(doc["sums"], dtype=np.float64) + delta.sums.ravel()).tolist()
    doc["hi"], doc["hc"], doc["hp"] = _add_score_bins(doc["hi"], doc["hc"], doc["hp"], delta)
    if delta.delay.any():
        delay = delta.delay.copy()
        delay[np.frombuffer(doc["di"], dtype=np.int32)] += np.frombuffer(doc["dc"], dtype=np.int64)
        dnz = np.flatnonzero(delay)
        doc["di"], doc["dc"] = dnz.astype(np.int32).tobytes(), delay[dnz].tobytes()
    add_rest(doc, delta)
    rank_into_doc(doc, rank_sum((stored, delta.rank)))
    range_into_doc(doc, range_sum((stored_range, delta.flag_range)), sum(doc["conf"]))
    return msgspec.msgpack.encode(doc)


def add_rest(doc: dict[str, Any], delta: BucketStats) -> None:
    """A delta's feature histograms, expired and implicit counts and slices added into a decoded stored bucket in
    place (the parts of add_encoded after the score and delay bins; encoded_many shares them)."""
    add_features(doc["f"], delta.features)
    doc["exp"] = int(doc["exp"]) + delta.expired
    doc["imp"] = int(doc["imp"]) + delta.implicit
    slices = doc.setdefault("s", {})
    for name, values in delta.slices.items():
        mine = slices.setdefault(name, {})
        for value, conf in values.items():
            prev = mine.get(value)
            mine[value] = (conf.ravel() + (0 if prev is None else np.asarray(prev, dtype=np.int64))).tolist()
        slices[name] = bounded(mine, add_lists)  # at most MAX_SLICE_VALUES apart (core/slice_bound.py)


def _add_score_bins(hi: bytes, hc: bytes, hp: bytes, delta: BucketStats) -> tuple[bytes, bytes, bytes]:
    """The stored sparse score bins plus the delta's, re-encoded: computed on the union of the stored and the
    delta's non-zero bins only (the same sums as the dense route); the dense route when the stored bins are not
    well-formed (out of range, lengths differ) or the delta's arrays are not int64/float64."""
    hist, psum = delta.hist.ravel(), delta.psum.ravel()
    idx = np.frombuffer(hi, dtype=np.int32)
    old_c, old_p = np.frombuffer(hc, dtype=np.int64), np.frombuffer(hp, dtype=np.float64)
    if (hist.dtype != np.int64 or psum.dtype != np.float64 or psum.size != hist.size or old_c.size != idx.size
            or old_p.size != idx.size or (idx.size and (int(idx.min()) < 0 or int(idx.max()) >= hist.size))):
        hist, psum = hist.copy(), psum.copy()
        hist[idx] += old_c
        psum[idx] += old_p
        nz = np.flatnonzero((hist != 0) | (psum != 0))
        return nz.astype(np.int32).tobytes(), hist[nz].tobytes(), psum[nz].tobytes()
    bins = unique_ints(np.concatenate((idx, delta.score_bins()[0])))
    h, p = hist[bins], psum[bins]
    at = np.searchsorted(bins, idx)
    h[at] += old_c
    p[at] += old_p
    keep = (h != 0) | (p != 0)
    return bins[keep].astype(np.int32).tobytes(), h[keep].tobytes(), p[keep].tobytes()
