"""Per-bucket feature histograms of one batch's feature dicts, a column per feature name counted with numpy.

`feature_hists` is the batch path (called by `Moves.deltas`); `_exact_bucket` is the reference rule, event by
event, which the batch path falls back to whenever a bucket refuses a name (undeclared, or over max_features).
Each column falls back to the per-value loop `_general` whenever its types are not one of the plain shapes
(numbers, short strings or booleans, each possibly with null or absent values).
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Sequence
from itertools import chain, compress, count, repeat
from operator import countOf
from typing import Any

import numpy as np

from .grids import N_FEATURE_BINS, feature_bin
from .list_arrays import f64, i64
from .limits import MAX_OVER_LIMIT_NAMES, MAX_UNDECLARED_NAMES, OVER_LIMIT_COUNTER, UNDECLARED_COUNTER
from .stats import BucketStats, FeatureHist

MAX_CATEGORIES_PER_BUCKET = 1000
MAX_CATEGORY_LEN = 200
OTHER = "__other__"


class _Absent:
    """The type of `_ABSENT` alone (a value of any other type is a value, however odd)."""


_ABSENT: Any = _Absent()
_NUMERIC = frozenset({float, int})
_BOOL_NAMES = {True: "true", False: "false"}
_NONE = type(None)
_GAPS = frozenset({_NONE, _Absent})
"""Types of the values that are no value: null, and `_ABSENT` for a name the dict lacks."""


def count_undeclared(counters: Counter[tuple[str, str]], name: str) -> None:
    """Count one refused occurrence of an undeclared feature name by name, for at most MAX_UNDECLARED_NAMES
    distinct names per batch (the store applies the same bound across batches)."""
    key = (UNDECLARED_COUNTER, name)
    if key in counters or sum(1 for n, _ in counters if n == UNDECLARED_COUNTER) < MAX_UNDECLARED_NAMES:
        counters[key] += 1


def count_over_limit(counters: Counter[tuple[str, str]], over: Counter[str]) -> None:
    """Count a bucket's occurrences of names refused over max_features: the total, and by name for at most
    MAX_OVER_LIMIT_NAMES distinct names per batch (the store applies the same bound across batches)."""
    if not over:
        return
    counters[("features_untracked", "over_limit")] += sum(over.values())
    room = MAX_OVER_LIMIT_NAMES - sum(1 for n, _ in counters if n == OVER_LIMIT_COUNTER)
    for name, n in over.items():
        key = (OVER_LIMIT_COUNTER, name)
        if key in counters:
            counters[key] += n
        elif room > 0:
            counters[key] = n
            room -= 1


def feature_hists(buckets: list[int], dicts: list[dict[str, Any]], declared: Sequence[str], max_features: int,
                  out: list[BucketStats], counters: Counter[tuple[str, str]]
                  ) -> tuple[np.ndarray, tuple[str, ...], list[list[Any]]] | None:
    """Each bucket's feature histograms from its predictions' feature dicts.

    Per bucket (and batch), the first `max_features` feature names seen are tracked; undeclared names (when
    features are declared) and names over that bound are refused, each occurrence counted. The common case (no
    refusal) is computed per feature name over the whole batch; otherwise the exact per-event rule applies.
    Returns (the buckets as an int64 array, the names, a column of values per name) when every dict holds the
    same names, none refused (the sample recording takes them from there, core/feature_columns.py); None
    otherwise.
    """
    decl = frozenset(declared)
    uniform = _uniform_columns(dicts)
    if uniform is not None:  # every dict has the same names: each bucket sees exactly these
        names, cols = uniform
        if len(names) <= max_features and (not decl or decl.issuperset(names)):
            by_name = dict(zip(names, cols))
            gap = (_ABSENT,) * len(dicts)
            batch = _Batch(buckets, out, bool(decl))
            for name in (*declared, *(n for n in names if n not in decl)):
                _one_feature(name, by_name.get(name, gap), batch)
            return batch.bidx, names, cols
    per_bucket: dict[int, list[dict[str, Any]]] = {}
    for b, d in zip(buckets, dicts):
        lst = per_bucket.get(b)
        if lst is None:
            per_bucket[b] = [d]
        else:
            lst.append(d)
    found: dict[str, None] = {}
    for lst in per_bucket.values():
        seen = dict.fromkeys(chain.from_iterable(lst))
        if len(seen) > max_features or (decl and not decl.issuperset(seen)):
            for b, mine in per_bucket.items():
                _exact_bucket(mine, declared, max_features, out[b], counters)
            return None
        found.update(seen)
    batch = _Batch(buckets, out, bool(decl))
    for name in (*declared, *(n for n in found if n not in decl)):
        _one_feature(name, [d.get(name, _ABSENT) for d in dicts], batch)
    return None


def _uniform_columns(dicts: list[dict[str, Any]]) -> tuple[tuple[str, ...], list[list[Any]]] | None:
    """(names, a column of values per name) when every dict has the same names (in any order), else None: the
    batch's dicts transposed in C (dicts of one length that all hold the first dict's names hold just those)."""
    names = tuple(dicts[0])
    if len(set(map(len, dicts))) != 1:
        return None
    try:
        return names, [[d[name] for d in dicts] for name in names]
    except KeyError:
        return None


class _Batch:
    """What every column of one batch shares: bucket indexes (list and array), each bucket's features dict, whether
    absent values count as missing (features declared), and the names already attached."""

    __slots__ = ("buckets", "bidx", "out", "feats", "declared", "done")

    def __init__(self, buckets: list[int], out: list[BucketStats], declared: bool) -> None:
        self.buckets = buckets
        self.bidx = np.asarray(buckets, dtype=np.int64)
        self.out = out
        self.feats = [s.features for s in out]
        self.declared = declared
        self.done: set[str] = set()

    def attach(self, name: str, bl: list[int], fhs: list[FeatureHist]) -> None:
        """fhs[i] becomes bucket bl[i]'s histogram of `name` (in C); a name attached before (a repeated declared
        name) is merged the way `_hist` would: values replaced, missing counts added."""
        if name not in self.done:
            self.done.add(name)
            deque(map(dict.__setitem__, map(self.feats.__getitem__, bl), repeat(name), fhs), maxlen=0)
            return
        for b, fh in zip(bl, fhs):
            old = _hist(self.out[b], name)
            if fh.num:
                old.num, old.num_bytes = fh.num, fh.num_bytes
            if fh.cat:
                old.cat = fh.cat
            old.missing += fh.missing


def _one_feature(name: str, vals: Sequence[Any], batch: _Batch) -> None:
    """One feature over the whole batch: fine numeric bins, category counts and missing counts per bucket
    (`_ABSENT` values are missing only when features are declared)."""
    types = _types(vals)
    real = types - _GAPS
    if real <= _NUMERIC or real == {str} or real == {bool}:
        if not types & _GAPS:
            parts = _values(batch.bidx, vals, real)
            if parts is not None:
                batch.attach(name, *parts)
                return
        elif _gapped(name, vals, types, real, batch):
            return
    _general(name, vals, batch)


def _types(vals: Sequence[Any]) -> set[type]:
    """The set of the values' types: one count of the first value's type (identity compares, cheaper than a set
    insert each) when they all share it, as most columns do."""
    first = type(vals[0]) if vals else None
    if vals and countOf(map(type, vals), first) == len(vals):
        return {first}  # type: ignore[arg-type]
    return set(map(type, vals))


def _gapped(name: str, vals: Sequence[Any], types: set[Any], real: set[Any], batch: _Batch) -> bool:
    """A plain column with null or absent values: its values, and its missing counts. False (nothing attached)
    when a string is too long for the plain path."""
    n = len(vals)
    keep = np.fromiter(map(real.__contains__, map(type, vals)), dtype=bool, count=n)
    made: dict[int, FeatureHist] = {}
    if real:
        kept = list(compress(vals, keep.tolist()))
        parts = _values(batch.bidx[keep], kept, real)
        if parts is None:
            return False
        made = dict(zip(*parts))
    gaps = _GAPS if batch.declared else {_NONE}  # absent values count as missing only for declared features
    if types <= real | gaps:  # each value is kept or missing (real and gaps are disjoint)
        missing = ~keep
    else:
        missing = np.fromiter(map(gaps.__contains__, map(type, vals)), dtype=bool, count=n)
    if missing.any():
        per = np.bincount(batch.bidx[missing])
        nz = np.flatnonzero(per)
        for b, gaps_n in zip(nz.tolist(), per[nz].tolist()):
            fh = made.get(b)
            if fh is None:
                made[b] = FeatureHist({}, {}, gaps_n)
            else:
                fh.missing = gaps_n
    batch.attach(name, list(made), list(made.values()))
    return True


def _values(bidx: np.ndarray, vals: Sequence[Any], types: set[Any]) -> tuple[list[int], list[FeatureHist]] | None:
    """(buckets, their histograms) of values of one plain shape: numbers (floats and ints), strings (None when
    one is longer than MAX_CATEGORY_LEN), or booleans."""
    if types <= _NUMERIC:
        bl, packed = _numeric_groups(bidx, f64(vals))
        n = len(bl)  # each histogram's bins as bytes alone: its num dict is built only if read
        return bl, list(map(FeatureHist, repeat(None, n), map(dict, repeat((), n)), repeat(0, n), repeat(None, n),
                            packed))
    groups = _category_groups(bidx, vals, _BOOL_NAMES if types == {bool} else None)
    if groups is None:
        return None
    bl, cats = groups
    return bl, list(map(FeatureHist, map(dict, repeat((), len(cats))), cats))


def _general(name: str, vals: Sequence[Any], batch: _Batch) -> None:
    """The per-value rule for a column of mixed or unusual values (the exact rule's classification)."""
    buckets, out, declared = batch.buckets, batch.out, batch.declared
    batch.done.add(name)
    nb: list[int] = []
    nv: list[float] = []
    cats: Counter[tuple[int, str]] = Counter()
    missing: Counter[int] = Counter()
    for b, v in zip(buckets, vals):
        if v is _ABSENT:
            if declared:
                missing[b] += 1
        elif v is None:
            missing[b] += 1
        elif v is True or v is False:
            cats[(b, "true" if v else "false")] += 1
        elif isinstance(v, (int, float)):
            nb.append(b)
            nv.append(v)
        else:
            cats[(b, v[:MAX_CATEGORY_LEN])] += 1
    if nv:
        _numeric(name, np.asarray(nb, dtype=np.int64), np.asarray(nv, dtype=np.float64), out)
    _categories(name, cats, out)
    for b, n in missing.items():
        _hist(out[b], name).missing += n


def _hist(stats: BucketStats, name: str) -> FeatureHist:
    fh = stats.features.get(name)
    if fh is None:
        fh = stats.features[name] = FeatureHist()
    return fh


def _numeric(name: str, bidx: np.ndarray, values: np.ndarray, out: list[BucketStats]) -> None:
    """Fine-bin counts per bucket, in bin order (into the buckets' histograms of `name`)."""
    for b, packed in zip(*_numeric_groups(bidx, values)):
        fh = _hist(out[b], name)
        fh.replace_bins(packed)


def _numeric_groups(bidx: np.ndarray, values: np.ndarray) -> tuple[list[int], list[tuple[bytes, bytes]]]:
    """(buckets, each one's fine-bin counts in bin order packed as feature_counts._feature_doc packs them: int32
    bins and int64 counts) of numeric values (FeatureHist builds its num dict from them when read)."""
    keys = bidx * N_FEATURE_BINS + feature_bin(values)
    uniq, cnt = np.unique(keys, return_counts=True)
    b_of = uniq // N_FEATURE_BINS
    bl, cuts = _groups(b_of)
    local = uniq - b_of * N_FEATURE_BINS
    return bl, _packed_runs(local, cnt, cuts)


def _packed_runs(local: np.ndarray, cnt: np.ndarray, cuts: list[slice]) -> list[tuple[bytes, bytes]]:
    """(int32 bins, int64 counts) bytes of each run: two conversions for the batch, then byte slices."""
    ib = local.astype(np.int32).tobytes()
    cb = cnt.astype(np.int64).tobytes()
    return [(ib[c.start * 4:c.stop * 4], cb[c.start * 8:c.stop * 8]) for c in cuts]


def _category_groups(bidx: np.ndarray, vals: Sequence[Any], labels: dict[Any, str] | None
                     ) -> tuple[list[int], list[dict[str, int]]] | None:
    """(buckets, each one's category counts) with each bucket's categories in the order of their first occurrence
    there, as a Counter filled value by value has them: values coded by first occurrence in the batch, counted
    with numpy (by uint16 cells, _small_cells, when they fit; else np.unique of int64 keys). `labels` renames
    values (booleans); distinct values must stay distinct labels. None when a string is longer than
    MAX_CATEGORY_LEN."""
    n = len(vals)
    room = _SMALL_KEYS // (int(bidx.max()) + 1) if n else 0  # distinct values the uint16 cells can hold
    if labels is _BOOL_NAMES and room >= 2:  # booleans are their own dense numbers (False 0, True 1)
        b_of, vi, cnt = _small_cells(bidx, i64(vals), 2)
        names = list(map(_BOOL_LABELS.__getitem__, vi.tolist()))
    else:
        seen: dict[Any, int] = {}  # each value looked up once: its code is the position of its first occurrence
        code = i64(list(map(seen.setdefault, vals, count())))
        if labels is None and max(map(len, seen)) > MAX_CATEGORY_LEN:
            return None
        if len(seen) <= room:
            distinct = list(seen) if labels is None else list(map(labels.__getitem__, seen))
            dense = np.zeros(n, dtype=np.int64)
            dense[list(seen.values())] = np.arange(len(seen), dtype=np.int64)  # first position -> value number
            b_of, vi, cnt = _small_cells(bidx, dense[code], len(seen))
            names = list(map(distinct.__getitem__, vi.tolist()))
        else:
            keys = bidx * n + code
            uniq, first, cnt = np.unique(keys, return_index=True, return_counts=True)
            b_of = uniq // n
            order = np.lexsort((first, b_of))
            uniq, b_of, cnt = uniq[order], b_of[order], cnt[order]
            at = (uniq - b_of * n).tolist()  # the first occurrence of each value: the object dict.fromkeys keeps
            names = list(map(vals.__getitem__, at)) if labels is None else [labels[vals[i]] for i in at]
    bl, cuts = _groups(b_of)
    cats = _dicts(names, cnt.tolist(), cuts)
    for i in [i for i, c in enumerate(cats) if len(c) > MAX_CATEGORIES_PER_BUCKET]:
        cats[i] = bound_categories(Counter(cats[i]))
    return bl, cats


_SMALL_KEYS = 1 << 16  # cells with uint16 keys: numpy's stable argsort of them is a (linear) radix sort
_BOOL_LABELS = [_BOOL_NAMES[False], _BOOL_NAMES[True]]


def _small_cells(bidx: np.ndarray, dense: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bucket, value number, count) of each (bucket, value) cell with a value (`dense`: numbers in [0, k)), ordered
    by bucket then the cell's first position, as np.unique(bucket · k + dense, return_index=True,
    return_counts=True) then lexsort((first, bucket)) orders them. Needs (max bucket + 1) · k ≤ _SMALL_KEYS."""
    keys = (bidx * k + dense).astype(np.uint16)
    order = np.argsort(keys, kind="stable")  # radix sort: equal keys keep their positions' order
    sk = keys[order]
    starts = np.flatnonzero(np.r_[True, sk[1:] != sk[:-1]])
    cnt = np.diff(np.r_[starts, len(sk)])
    cell = sk[starts].astype(np.int64)
    b_of = cell // k
    by = np.lexsort((order[starts], b_of))  # order[starts]: each cell's first position (the sort is stable)
    return b_of[by], (cell - b_of * k)[by], cnt[by]


def _groups(b_of: np.ndarray) -> tuple[list[int], list[slice]]:
    """(bucket, slice) of each run of equal buckets in a sorted array."""
    starts = np.flatnonzero(np.r_[True, b_of[1:] != b_of[:-1]])
    ends = np.r_[starts[1:], len(b_of)]
    return b_of[starts].tolist(), list(map(slice, starts.tolist(), ends.tolist()))


def _dicts(keys: list[Any], counts: list[int], cuts: list[slice]) -> list[dict[Any, int]]:
    """dict(zip(keys[c], counts[c])) for each slice c, in C."""
    return list(map(dict, map(zip, map(keys.__getitem__, cuts), map(counts.__getitem__, cuts))))


def _categories(name: str, counts: Counter[tuple[int, str]], out: list[BucketStats]) -> None:
    per: dict[int, Counter[str]] = {}
    for (b, v), n in counts.items():
        c = per.get(b)
        if c is None:
            c = per[b] = Counter()
        c[v] += n
    for b, c in per.items():
        _hist(out[b], name).cat = bound_categories(c)


def bound_categories(cats: Counter[str]) -> dict[str, int]:
    """At most MAX_CATEGORIES_PER_BUCKET categories: the rarest are summed under OTHER."""
    if len(cats) <= MAX_CATEGORIES_PER_BUCKET:
        return dict(cats)
    top = cats.most_common(MAX_CATEGORIES_PER_BUCKET - 1)
    kept = dict(top)
    kept[OTHER] = kept.get(OTHER, 0) + sum(cats.values()) - sum(kept.values())
    return kept


def _exact_bucket(dicts: list[dict[str, Any]], declared: Sequence[str], max_features: int, stats: BucketStats,
                  counters: Counter[tuple[str, str]]) -> None:
    """The reference rule, event by event: track the first names seen, count every refused occurrence."""
    decl = frozenset(declared)
    tracked: set[str] = set()
    num: dict[str, list[float]] = {}
    cat: dict[str, Counter[str]] = {}
    missing: Counter[str] = Counter()
    over: Counter[str] = Counter()
    for feats in dicts:
        for name in declared:
            if name not in feats:
                missing[name] += 1
        for name, value in feats.items():
            if name not in tracked:
                if decl and name not in decl:
                    counters[("features_untracked", "undeclared")] += 1
                    count_undeclared(counters, name)
                    continue
                if len(tracked) >= max_features:
                    over[name] += 1
                    continue
                tracked.add(name)
            if value is None:
                missing[name] += 1
            elif value is True or value is False:
                cat.setdefault(name, Counter())["true" if value else "false"] += 1
            elif isinstance(value, (int, float)):
                num.setdefault(name, []).append(value)
            else:
                cat.setdefault(name, Counter())[value[:MAX_CATEGORY_LEN]] += 1
    count_over_limit(counters, over)
    for name in dict.fromkeys((*num, *cat, *missing)):
        fh = FeatureHist(missing=missing.get(name, 0))
        vals = num.get(name)
        if vals:
            idx, cnt = np.unique(feature_bin(np.asarray(vals, dtype=np.float64)), return_counts=True)
            fh.num = dict(zip(idx.tolist(), cnt.tolist()))
        if name in cat:
            fh.cat = bound_categories(cat[name])
        stats.features[name] = fh


__all__ = ["feature_hists", "bound_categories", "count_undeclared", "count_over_limit", "MAX_CATEGORY_LEN", "MAX_CATEGORIES_PER_BUCKET",
           "OTHER"]
