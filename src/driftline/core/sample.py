"""Bounded, mergeable samples of feature vectors: a threshold sample by a hash of the prediction id.

A `FeatureSample` holds exactly the offered predictions whose 64-bit id hash is ≤ its threshold `tau`, at most
k of them. Merging two samples keeps the rows ≤ the smaller threshold and, past k rows, lowers the threshold to
the k-th smallest hash. So merging is associative and commutative and the result depends only on the set of
predictions offered, never on arrival order, batching or partitioning: the merge of two samples of disjoint (or
overlapping) sets equals the sample of their union. Every prediction of a window with a hash ≤ the merged
threshold is in the merged sample, so it is a uniform random sample of the window (predictions are included by
their id's hash, which is independent of their features). Pure: no IO.
"""

from __future__ import annotations

import hashlib
import math
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, compress, repeat
from operator import is_, is_not, itemgetter, lt, methodcaller
from typing import Any

import msgspec
import numpy as np

from .list_arrays import f64, i64

Value = float | str
"""A sampled feature value: a number, or a category (booleans become 'true'/'false'); absent means missing."""
Row = dict[str, Value]

MAX_TAU = 2**64 - 1
"""The threshold of a sample that was never truncated: every offered prediction is in it."""
MAX_VALUE_LEN = 64
"""Characters kept of a categorical value in a sample (bounds the bytes of a row)."""
DEFAULT_K = 256
MIN_K, MAX_K = 16, 4096
"""drift.sample_k: rows kept per bucket (default, and the bounds the config accepts)."""


def id_hash(prediction_id: str) -> int:
    """64-bit hash of a prediction id (blake2b: the same on every process, platform and Python run)."""
    raw = prediction_id.encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "big")


_encoded = methodcaller("encode", "utf-8", "surrogatepass")


def id_hashes(prediction_ids: Iterable[str]) -> np.ndarray:
    """id_hash of every id as a uint64 array (big-endian: .tolist() gives the ints id_hash gives). Each hash
    starts from a copy of one fresh 8-byte blake2b state (cheaper than a new one per id), and ids are encoded
    strictly when they can be (the same bytes as surrogatepass for every id without a lone surrogate)."""
    ids = list(prediction_ids)
    try:
        raws = list(map(str.encode, ids))
    except (UnicodeEncodeError, TypeError):
        raws = list(map(_encoded, ids))
    fresh = hashlib.blake2b(digest_size=8)
    digests = []
    for raw in raws:
        h = fresh.copy()
        h.update(raw)
        digests.append(h.digest())
    return np.frombuffer(b"".join(digests), dtype=">u8")


def _floats(vals: Sequence[float | None], gaps: bool) -> tuple[list[Value | None], bool]:
    """A float is kept when finite; NaN and infinities are left out (None). Nulls (`gaps`) stay None. Without
    nulls, finiteness is checked on one numpy array of the same doubles."""
    if not gaps:
        if np.isfinite(f64(vals)).all():
            return list(vals), False
    elif all(map(math.isfinite, filter(None, vals))):  # zeros, which filter skips with the nulls, are finite
        return list(vals), True
    return [v if v is not None and math.isfinite(v) else None for v in vals], True


def _strs(vals: Sequence[str | None], gaps: bool) -> tuple[list[Value | None], bool]:
    """A category keeps its first MAX_VALUE_LEN characters (nulls stay None): lengths looked at once per
    distinct value."""
    distinct = set(vals)
    distinct.discard(None)  # type: ignore[arg-type]
    if max(map(len, distinct), default=0) <= MAX_VALUE_LEN:  # type: ignore[arg-type]
        return list(vals), gaps
    return [None if v is None else v[:MAX_VALUE_LEN] for v in vals], gaps


def _bools(vals: Sequence[bool | None], gaps: bool) -> tuple[list[Value | None], bool]:
    """A boolean becomes the category 'true' or 'false' (nulls stay None): without nulls, one numpy lookup."""
    if gaps:
        return list(map(_BOOL_NAMES.__getitem__, vals)), True
    return _BOOL_ARRAY[np.fromiter(vals, dtype=np.uint8, count=len(vals))].tolist(), False


def _ints(vals: Sequence[int | None], gaps: bool) -> tuple[list[Value | None], bool]:
    """An integer becomes a float (one too large for a float raises OverflowError, as float() does); nulls stay
    None. Integers within int64 are converted by numpy: int64 to float64 rounds to nearest, ties to even, as
    float() does, so the doubles are the same."""
    if not gaps:
        try:
            ints = i64(vals)  # no shape discovery pass
        except OverflowError:
            return list(map(float, vals)), False  # type: ignore[arg-type]
        return ints.astype(np.float64).tolist(), False
    out: list[Value | None] = list(vals)  # type: ignore[arg-type]
    at = list(compress(range(len(vals)), map(is_not, vals, repeat(None))))
    deque(map(out.__setitem__, at, map(float, map(out.__getitem__, at))), 0)
    return out, True


_BOOL_NAMES = {True: "true", False: "false", None: None}
_BOOL_ARRAY = np.array(["false", "true"], dtype=object)
_NONE = type(None)
_RULES: dict[type, Callable[[Any, bool], tuple[list[Value | None], bool]]] = {float: _floats, str: _strs,
                                                                               bool: _bools, int: _ints}
"""The sampled form of a value, by its exact type, a column of one type (with nulls when told) at a time, and
whether that column may hold a None (False: it holds none); any other type (null included) is left out."""


def sample_values(vals: Sequence[object], kinds: list[type] | None = None) -> list[Value | None]:
    """Each value's sampled form, None where it is left out: the one rule of sampled values. `kinds`: the values'
    types, when known. A column of one type, with or without nulls, goes through its type's rule in one call; a
    mixed column is split by type, each part through its rule."""
    return sampled_column(vals, kinds)[0]


def sampled_column(vals: Sequence[object], kinds: list[type] | None = None) -> tuple[list[Value | None], bool]:
    """(sample_values(vals, kinds), whether it may hold a None: False only when the rule proved it holds none),
    so that a batch's columns are not scanned for None again (sample_columns.BatchColumns)."""
    if kinds is None:
        kinds = list(map(type, vals))
    first = kinds[0] if kinds else _NONE
    types = {first} if kinds.count(first) == len(kinds) else set(kinds)
    gaps = _NONE in types
    types.discard(_NONE)
    if len(types) <= 1:
        rule = _RULES.get(types.pop()) if types else None
        return ([None] * len(vals), True) if rule is None else rule(vals, gaps)
    out: list[Value | None] = [None] * len(vals)
    for t in types:
        rule = _RULES.get(t)
        if rule is not None:
            mask = list(map(is_, kinds, repeat(t)))
            deque(map(out.__setitem__, compress(range(len(vals)), mask),
                      rule(list(compress(vals, mask)), False)[0]), 0)
    return out, True


def sample_row(features: Mapping[str, object] | None, keep: Sequence[str], max_features: int) -> Row:
    """The sampled form of a prediction's features: the declared names `keep` first, then the others by name,
    at most `max_features`; numbers as floats, booleans and strings as categories, null and non-finite left out
    (missing)."""
    if not features:
        return {}
    names: Sequence[str] = list(features)
    if len(features) > max_features:
        declared = set(keep)
        chosen = [n for n in keep if n in features]
        names = (chosen + sorted(n for n in features if n not in declared))[:max_features]
    vals = sample_values(list(map(features.__getitem__, names)))
    return {n: v for n, v in zip(names, vals) if v is not None}


def sample_rows(features: Iterable[Mapping[str, object] | None], keep: Sequence[str], max_features: int
                ) -> list[Row]:
    """[sample_row(f, keep, max_features) for f in features], a column per name at a time (sampled_columns):
    each row rebuilt in its dict's name order from the columns (a new dict, never the event's); in one call per
    row when every dict has the same names in the same order."""
    dicts = sampleable(features, keep, max_features)
    names, cols = sampled_columns(dicts)
    if not names:
        return [{} for _ in dicts]
    if len(set(map(tuple, dicts))) == 1:  # every dict's names are `names`, in this order
        rows: list[Row] = list(map(dict, map(zip, repeat(names), zip(*cols))))
        if any(None in col for col in cols):
            rows = [{n: v for n, v in row.items() if v is not None} if None in row.values() else row
                    for row in rows]
        return rows
    col_of = dict(zip(names, cols))
    rows = []
    for j, d in enumerate(dicts):
        row = dict(zip(d, map(list.__getitem__, map(col_of.__getitem__, d), repeat(j))))
        rows.append({n: v for n, v in row.items() if v is not None} if None in row.values() else row)
    return rows


def sampleable(features: Iterable[Mapping[str, object] | None], keep: Sequence[str], max_features: int
               ) -> list[Mapping[str, object]]:
    """Each prediction's features as a dict whose sampled values (sample_values) are its sample_row: the event's
    own dict when it has at most max_features names, else its sample_row (whose values the rule keeps as they
    are: finite floats, short strings); {} for none."""
    return [f if type(f) is dict and len(f) <= max_features else sample_row(f, keep, max_features) if f else {}
            for f in features]


def sampled_columns(dicts: Sequence[Mapping[str, object]]) -> tuple[list[str], list[list[Value | None]]]:
    """(names in order of first appearance, a column per name): column[j] is the sampled value of dicts[j]'s
    name, None when it has none or it is left out. The values of every name go through sample_values at once;
    when every dict has the first's names (same count, none missing), the batch's values in name order and
    their types are listed in one pass each and cut into columns."""
    names = list(dicts[0]) if dicts else []
    width = len(names)
    if width and len(set(map(len, dicts))) == 1:
        try:
            if width == 1:
                flat = list(map(itemgetter(names[0]), dicts))
            else:
                flat = list(chain.from_iterable(map(itemgetter(*names), dicts)))
        except KeyError:
            pass
        else:
            kinds = list(map(type, flat))
            return names, [sample_values(flat[i::width], kinds[i::width]) for i in range(width)]
    names = list(dict.fromkeys(chain.from_iterable(dicts)))
    return names, [sample_values(list(map(dict.get, dicts, repeat(n)))) for n in names]


_row_enc = msgspec.msgpack.Encoder(order="sorted")


def _tie_key(row: Row) -> bytes:
    return _row_enc.encode(row)


@dataclass(frozen=True, slots=True)
class FeatureSample:
    """The offered predictions with id hash ≤ tau (at most k of them), sorted by hash."""

    tau: int
    hashes: tuple[int, ...]
    rows: tuple[Row, ...]

    @staticmethod
    def empty() -> FeatureSample:
        return FeatureSample(MAX_TAU, (), ())

    def __len__(self) -> int:
        return len(self.hashes)

    def truncated(self) -> bool:
        """Whether some offered predictions were left out (the threshold was lowered)."""
        return self.tau < MAX_TAU


@dataclass(frozen=True, slots=True)
class Candidates:
    """Sorted (hash, …) items cut to the k smallest distinct hashes; `cut` when some were left out."""

    items: list[tuple[int, int, int]] | list[tuple[int, int]]
    cut: bool


def smallest_distinct(items: Sequence[Any], k: int) -> Candidates:
    """Of items sorted by hash (their first element), those holding one of the k smallest distinct hashes
    (every copy of a repeated hash stays, for sample_of's order-free choice between their rows)."""
    if len(items) <= k:  # at most k items hold at most k distinct hashes
        return Candidates(list(items), False)
    distinct, last = 0, None
    for n, item in enumerate(items):
        if item[0] != last:
            distinct, last = distinct + 1, item[0]
            if distinct > k:
                return Candidates(list(items[:n]), True)
    return Candidates(list(items), False)


def sample_of(items: Iterable[tuple[int, Row]], k: int, tau: int = MAX_TAU) -> FeatureSample:
    """The sample of (hash, row) items, at most k rows, under threshold tau. One hash, one row: of two rows with
    the same hash (a duplicated prediction id) the smaller encoding is kept, so the choice is order-free."""
    if k < 1:
        raise ValueError(f"sample size k must be at least 1, got {k}")
    best: dict[int, Row] = {}
    for h, row in items:
        if h > tau:
            continue
        cur = best.get(h)
        if cur is None or (cur != row and _tie_key(row) < _tie_key(cur)):
            best[h] = row
    keys = sorted(best)
    if len(keys) > k:
        keys = keys[:k]
        tau = keys[-1]
    return FeatureSample(tau, tuple(keys), tuple(best[h] for h in keys))


def sample_sorted(hashes: Sequence[int], rows: Sequence[Row], k: int, tau: int = MAX_TAU) -> FeatureSample:
    """sample_of(zip(hashes, rows), k, tau) for hashes sorted ascending: when they are distinct, at most k and
    none above tau, that sample is them as they are (one row per hash, nothing cut)."""
    if 1 <= len(hashes) <= k and hashes[-1] <= tau and all(map(lt, hashes, hashes[1:])):
        return FeatureSample(tau, tuple(hashes), tuple(rows))
    return sample_of(zip(hashes, rows), k, tau)


def merge_samples(samples: Iterable[FeatureSample], k: int) -> FeatureSample:
    """The sample of the union of the samples' predictions (threshold: the smallest, lowered to keep ≤ k rows);
    their rows sorted by hash, so that distinct hashes, at most k, are taken as they are (sample_sorted)."""
    parts = list(samples)
    if not parts:
        return FeatureSample.empty()
    tau = min(s.tau for s in parts)
    hashes = list(chain.from_iterable(s.hashes for s in parts))
    rows = list(chain.from_iterable(s.rows for s in parts))
    order = sorted(range(len(hashes)), key=hashes.__getitem__)  # then distinct hashes, the common case, are kept
    return sample_sorted(list(map(hashes.__getitem__, order)), list(map(rows.__getitem__, order)), k, tau)


def encode_sample(s: FeatureSample) -> bytes:
    """Compact, deterministic bytes: the threshold, the hashes, the feature names once and a column per name."""
    names = sorted(set().union(*s.rows))
    cols: Sequence[Sequence[Value | None]]
    if len(names) > 1:  # a row with every name gives its column values in one call; tuples encode as lists do
        width, every = len(names), itemgetter(*names)
        cols = list(zip(*[every(r) if len(r) == width else tuple(map(r.get, names)) for r in s.rows]))
    else:
        cols = [list(map(dict.get, s.rows, repeat(n))) for n in names]
    return msgspec.msgpack.encode({"tau": s.tau, "h": s.hashes, "f": names, "v": cols})


class _Stored(msgspec.Struct):
    tau: int
    h: list[int]
    f: list[str]
    v: list[list[float | str | None]]


_dec = msgspec.msgpack.Decoder(_Stored)


def _row(s: _Stored, i: int) -> Row:
    return {name: col[i] for name, col in zip(s.f, s.v) if col[i] is not None}  # type: ignore[misc]


def stored_columns(data: bytes) -> _Stored:
    """The threshold, hashes, names and columns stored by encode_sample, checked: a column per name, a value per
    hash in every column (ValueError otherwise)."""
    s = _dec.decode(data)
    if len(s.v) != len(s.f) or any(len(col) != len(s.h) for col in s.v):
        raise ValueError(f"corrupt feature sample: {len(s.f)} names, {len(s.v)} columns, {len(s.h)} hashes, "
                         f"column lengths {sorted({len(col) for col in s.v})}")
    return s


def decode_sample(data: bytes) -> FeatureSample:
    """The sample stored by encode_sample (a row without a missing value built in one call)."""
    s = stored_columns(data)
    if not s.f:
        return FeatureSample(s.tau, tuple(s.h), tuple({} for _ in s.h))
    return FeatureSample(s.tau, tuple(s.h), tuple(dict(zip(s.f, vals)) if None not in vals else
                                                  {n: v for n, v in zip(s.f, vals) if v is not None}
                                                  for vals in zip(*s.v)))


def merge_encoded(blobs: Iterable[bytes], k: int) -> FeatureSample:
    """merge_samples of stored samples, building rows only for the hashes that can be kept (a window reads
    hundreds of bucket samples and keeps a few thousand rows)."""
    parts = [_dec.decode(b) for b in blobs]
    if not parts:
        return FeatureSample.empty()
    tau = min(p.tau for p in parts)
    cand = smallest_distinct(sorted((h, j, i) for j, p in enumerate(parts) for i, h in enumerate(p.h) if h <= tau),
                             k)
    if cand.cut:
        tau = cand.items[-1][0]
    return sample_of(((h, _row(parts[j], i)) for h, j, i in cand.items), k, tau)
