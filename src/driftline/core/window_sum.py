"""A window's sum straight from its encoded buckets (BucketStats.to_bytes) when feature histograms are not asked
for: `merge(BucketStats.from_bytes(d, features=False) for d in datas)` without building each bucket's dense score
arrays (3 × 2,611 bins of counts and of sums, most of them zero) — one bincount per kind over the window instead.
Every sum adds the same terms in the same order as merge, so the result is the same to the last bit."""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter
from typing import Any

import msgspec
import numpy as np

from .flag_range import FlagRange, range_from_doc, range_from_raw, range_sum
from .grids import N_DELAY_BINS, N_SCORE_BINS
from .rank_hist import RANK_ROW, Rank, in_order, labelled_in_conf, stored_rank_parts, summed
from .stats import BucketStats, merge


class _Summable(msgspec.Struct):
    """The parts of an encoded bucket a window sum without features reads ("f" is skipped unparsed)."""

    conf: list[int]
    hi: bytes
    hc: bytes
    hp: bytes
    sums: list[float]
    di: bytes
    dc: bytes
    exp: int
    imp: int
    s: dict[str, dict[str, list[int]]] = {}
    ri: Any = None
    rc: Any = None
    rs: Any = None
    tr: Any = None


_decoder = msgspec.msgpack.Decoder(_Summable)
_FIELDS = attrgetter("hi", "hc", "hp", "di", "dc", "conf", "sums", "exp", "imp", "s", "tr")
"""The fields of a decoded bucket sum_encoded reads, in one C-level call per bucket."""
_RANK_FIELDS = attrgetter("ri", "rc", "rs", "sums")
"""The fields stored_rank_parts reads (None where the bucket has none)."""
_CELLS = 3 * N_SCORE_BINS


class _Flags(msgspec.Struct):
    """The parts of an encoded bucket that say how its predictions were flagged."""

    conf: list[int]
    hi: bytes
    hc: bytes


_flags_decoder = msgspec.msgpack.Decoder(_Flags)


def flag_counts(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """An encoded bucket's conf (3 × 2) and dense score histogram (3 × N_SCORE_BINS), nothing else decoded."""
    try:
        doc = _flags_decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        b = BucketStats.from_bytes(data, features=False)
        return b.conf, b.hist
    hist = np.zeros(_CELLS, dtype=np.int64)
    hist[np.frombuffer(doc.hi, dtype=np.int32)] = np.frombuffer(doc.hc, dtype=np.int64)
    return np.asarray(doc.conf, dtype=np.int64).reshape(3, 2), hist.reshape(3, N_SCORE_BINS)


class _Range(msgspec.Struct):
    """The parts of an encoded bucket that say which thresholds its predictions were flagged at."""

    conf: list[int]
    tr: Any = None


_range_decoder = msgspec.msgpack.Decoder(_Range)


def flag_record(data: bytes) -> tuple[FlagRange | None, int]:
    """An encoded bucket's recorded flag range (core.flag_range; None: unknown) and its prediction count, nothing
    else decoded."""
    try:
        doc = _range_decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        b = BucketStats.from_bytes(data, features=False)
        return b.flag_range, b.predictions
    n = sum(doc.conf)
    return range_from_doc({} if doc.tr is None else {"tr": doc.tr}, n), n


def _merged(datas: Sequence[bytes]) -> BucketStats:
    """merge's own route: each bucket decoded, then summed."""
    return merge(BucketStats.from_bytes(d, features=False) for d in datas)


def sum_encoded(datas: Sequence[bytes], records: list[tuple[FlagRange | None, int]] | None = None
                ) -> BucketStats:
    """The sum of encoded buckets, feature histograms left out; merge's own route for anything the fast one does
    not read as it is written (an older or damaged encoding). `records`, when given, receives each bucket's
    flag_record from the same decode (left empty by merge's route), so a window's flags need not decode it again."""
    try:
        docs = [_decoder.decode(d) for d in datas]
    except (msgspec.DecodeError, msgspec.ValidationError):
        return _merged(datas)
    if not docs:
        return BucketStats()
    # each field as one column (C-level passes over the docs: a window of six partitions has ~2,000 buckets)
    hi, hc, hp, di, dc, conf, sums_rows, exp, imp, sl, tr = zip(*map(_FIELDS, docs))
    n_hi, n_di = list(map(len, hi)), list(map(len, di))
    doubled_hi, doubled_di = [2 * n for n in n_hi], [2 * n for n in n_di]
    if (list(map(len, hc)) != doubled_hi or list(map(len, hp)) != doubled_hi or list(map(len, dc)) != doubled_di
            or set(map(len, conf)) != {6} or set(map(len, sums_rows)) != {9}):
        return _merged(datas)
    total = BucketStats()
    conf_rows = np.array(conf, dtype=np.int64)
    total.conf[:] = conf_rows.sum(axis=0).reshape(3, 2)
    idx = np.frombuffer(b"".join(hi), dtype=np.int32).astype(np.int64)
    didx = np.frombuffer(b"".join(di), dtype=np.int32)
    if not (in_order(idx, [n // 4 for n in n_hi], _CELLS) and in_order(didx, [n // 4 for n in n_di], N_DELAY_BINS)):
        return _merged(datas)
    counts = np.frombuffer(b"".join(hc), dtype=np.int64)
    # bincount adds each cell's terms in array order, bucket after bucket, from 0.0: merge's order (+= per bucket)
    total.hist[:] = np.rint(np.bincount(idx, weights=counts, minlength=_CELLS)).astype(np.int64).reshape(3, -1)
    total.psum[:] = np.bincount(idx, weights=np.frombuffer(b"".join(hp), dtype=np.float64),
                                minlength=_CELLS).reshape(3, -1)
    sums = np.zeros((len(docs) + 1, 9), dtype=np.float64)
    sums[1:] = sums_rows
    total.sums[:] = np.cumsum(sums, axis=0)[-1].reshape(3, 3)  # sequential from 0.0, as merge adds them
    np.add.at(total.delay, didx, np.frombuffer(b"".join(dc), dtype=np.int64))
    total.expired = sum(exp)
    total.implicit = sum(imp)
    for slices in filter(None, sl):
        for name, values in slices.items():
            mine = total.slices.setdefault(name, {})
            for value, cells in values.items():
                cell = np.asarray(cells, dtype=np.int64).reshape(3, 2)
                mine[value] = mine[value] + cell if value in mine else cell
    rank = _rank(docs)
    if rank is False:
        return _merged(datas)
    total.rank = rank
    predictions = list(map(sum, conf))
    ranges = list(map(range_from_raw, tr, predictions))
    total.flag_range = range_sum(ranges)
    if records is not None:
        records.extend(zip(ranges, predictions))
    return total


def _rank(docs: list[_Summable]) -> Rank | None | bool:
    """rank_sum of the buckets' rank_from_doc, their arrays joined first: None when any is unknown; False when a
    bucket's keys are not strictly increasing or a count is zero (rank_sum keeps a lone such part as it is)."""
    ri, rc, rs, sums = zip(*map(_RANK_FIELDS, docs)) if docs else ((), (), (), ())
    raw = list(map(stored_rank_parts, ri, rc, rs, sums, map(labelled_in_conf, (d.conf for d in docs))))
    known = [r for r in raw if r is not None]
    if len(known) < len(raw):
        return None
    keys = np.frombuffer(b"".join([r[0] for r in known]), dtype=np.int32)
    if keys.size and (int(keys.min()) < 0 or int(keys.max()) >= RANK_ROW):
        return None  # rank_from_doc gives None for such a bucket
    counts = _counts(known)
    if not (in_order(keys, [len(r[0]) // 4 for r in known], RANK_ROW) and counts.all()):
        return False
    return summed(keys, counts)


def _counts(known: list[tuple[bytes, bytes, Any]]) -> np.ndarray:
    """The buckets' stored ranking counts as one int64 array: one conversion when they share a width (as a
    window's buckets mostly do), else one per bucket (stored_rank's)."""
    if not known:
        return np.zeros(0, dtype=np.int64)
    kinds = {kind for _, _, kind in known}
    if len(kinds) == 1:
        return np.frombuffer(b"".join([rc for _, rc, _ in known]), dtype=kinds.pop()).astype(np.int64)
    return np.concatenate([np.frombuffer(rc, dtype=kind).astype(np.int64) for _, rc, kind in known])
