"""Per-bucket feature histograms of one batch's feature dicts, a column per feature name counted with numpy.

`feature_hists` is the batch path (called by `Moves.deltas`); `_exact_bucket` is the reference rule, event by
event, which the batch path falls back to whenever a bucket refuses a name (undeclared, or over max_features).
Each column falls back to the per-value loop `_general` whenever its types are not one of the plain shapes
(numbers, short strings or booleans, each possibly with null or absent values).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import chain, compress
from operator import itemgetter
from typing import Any

import numpy as np

from .grids import N_FEATURE_BINS, feature_bin
from .limits import MAX_UNDECLARED_NAMES, UNDECLARED_COUNTER
from .stats import BucketStats, FeatureHist

MAX_CATEGORIES_PER_BUCKET = 1000
MAX_CATEGORY_LEN = 200
OTHER = "__other__"
_ABSENT: Any = object()
_NUMERIC = frozenset({float, int})
_BOOL_NAMES = {True: "true", False: "false"}
_NONE = type(None)
_GAPS = frozenset({_NONE, object})
"""Types of the values that are no value: null, and `_ABSENT` (a bare object) for a name the dict lacks."""


def count_undeclared(counters: Counter[tuple[str, str]], name: str) -> None:
    """Count one refused occurrence of an undeclared feature name by name, for at most MAX_UNDECLARED_NAMES
    distinct names per batch (the store applies the same bound across batches)."""
    key = (UNDECLARED_COUNTER, name)
    if key in counters or sum(1 for n, _ in counters if n == UNDECLARED_COUNTER) < MAX_UNDECLARED_NAMES:
        counters[key] += 1


def feature_hists(buckets: list[int], dicts: list[dict[str, Any]], declared: Sequence[str], max_features: int,
                  out: list[BucketStats], counters: Counter[tuple[str, str]]) -> None:
    """Each bucket's feature histograms from its predictions' feature dicts.

    Per bucket (and batch), the first `max_features` feature names seen are tracked; undeclared names (when
    features are declared) and names over that bound are refused, each occurrence counted. The common case (no
    refusal) is computed per feature name over the whole batch; otherwise the exact per-event rule applies.
    """
    decl = frozenset(declared)
    uniform = _uniform_columns(dicts)
    if uniform is not None:  # every dict has the same names: each bucket sees exactly these
        names, cols = uniform
        if len(names) <= max_features and (not decl or decl.issuperset(names)):
            bidx = np.asarray(buckets, dtype=np.int64)
            by_name = dict(zip(names, cols))
            gap = (_ABSENT,) * len(dicts)
            for name in (*declared, *(n for n in names if n not in decl)):
                _one_feature(name, bidx, buckets, by_name.get(name, gap), out, bool(decl))
            return
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
            return
        found.update(seen)
    bidx = np.asarray(buckets, dtype=np.int64)
    for name in (*declared, *(n for n in found if n not in decl)):
        _one_feature(name, bidx, buckets, [d.get(name, _ABSENT) for d in dicts], out, bool(decl))


def _uniform_columns(dicts: list[dict[str, Any]]) -> tuple[tuple[str, ...], list[tuple[Any, ...]]] | None:
    """(names, a column of values per name) when every dict has the same names (in any order), else None: the
    batch's dicts transposed in C (dicts of one length that all hold the first dict's names hold just those)."""
    names = tuple(dicts[0])
    if len(set(map(len, dicts))) != 1:
        return None
    try:
        return names, [tuple(map(itemgetter(name), dicts)) for name in names]
    except KeyError:
        return None


def _one_feature(name: str, bidx: np.ndarray, buckets: list[int], vals: Sequence[Any], out: list[BucketStats],
                 declared: bool) -> None:
    """One feature over the whole batch: fine numeric bins, category counts and missing counts per bucket
    (`_ABSENT` values are missing only when features are declared)."""
    types = set(map(type, vals))
    real = types - _GAPS
    if not real <= _NUMERIC and real != {str} and real != {bool}:
        _general(name, buckets, vals, out, declared)
        return
    if types & _GAPS:
        gaps = {_NONE, object} if declared else {_NONE}
        missing = np.fromiter(map(gaps.__contains__, map(type, vals)), dtype=bool, count=len(vals))
        keep = np.fromiter(map(real.__contains__, map(type, vals)), dtype=bool, count=len(vals))
        if real == {str} and max(map(len, compress(vals, keep.tolist())), default=0) > MAX_CATEGORY_LEN:
            _general(name, buckets, vals, out, declared)
            return
        if keep.any():
            _values(name, bidx[keep], list(compress(vals, keep.tolist())), real, out)
        if missing.any():
            per = np.bincount(bidx[missing])
            nz = np.flatnonzero(per)
            for b, n in zip(nz.tolist(), per[nz].tolist()):
                _hist(out[b], name).missing += n
        return
    if real == {str} and max(map(len, vals)) > MAX_CATEGORY_LEN:
        _general(name, buckets, vals, out, declared)
        return
    _values(name, bidx, vals, real, out)


def _values(name: str, bidx: np.ndarray, vals: Sequence[Any], types: set[type], out: list[BucketStats]) -> None:
    """Values of one plain shape: numbers (floats and ints), strings of at most MAX_CATEGORY_LEN, or booleans."""
    if types <= _NUMERIC:
        _numeric(name, bidx, np.asarray(vals, dtype=np.float64), out)
    elif types == {bool}:
        _coded_categories(name, bidx, vals, _BOOL_NAMES, out)
    else:
        _coded_categories(name, bidx, vals, None, out)


def _general(name: str, buckets: list[int], vals: Sequence[Any], out: list[BucketStats], declared: bool) -> None:
    """The per-value rule for a column of mixed or unusual values (the exact rule's classification)."""
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


def _groups(b_of: np.ndarray) -> tuple[list[int], list[int], list[int]]:
    """(bucket, start, end) of each run of equal buckets in a sorted array, as lists."""
    starts = np.flatnonzero(np.r_[True, b_of[1:] != b_of[:-1]])
    ends = np.r_[starts[1:], len(b_of)]
    return b_of[starts].tolist(), starts.tolist(), ends.tolist()


def _numeric(name: str, bidx: np.ndarray, values: np.ndarray, out: list[BucketStats]) -> None:
    """Fine-bin counts per bucket, in bin order."""
    keys = bidx * N_FEATURE_BINS + feature_bin(values)
    uniq, cnt = np.unique(keys, return_counts=True)
    b_of = uniq // N_FEATURE_BINS
    bins = (uniq - b_of * N_FEATURE_BINS).tolist()
    counts = cnt.tolist()
    for b, a, e in zip(*_groups(b_of)):
        _hist(out[b], name).num = dict(zip(bins[a:e], counts[a:e]))


def _coded_categories(name: str, bidx: np.ndarray, vals: Sequence[Any], labels: dict[Any, str] | None,
                      out: list[BucketStats]) -> None:
    """Category counts per bucket, each bucket's categories in the order of their first occurrence there (as a
    Counter filled value by value has them): values coded by first occurrence in the batch, counted with numpy.
    `labels` renames values (booleans); distinct values must stay distinct labels."""
    index = dict.fromkeys(vals)
    ncat = len(index)
    code = dict(zip(index, range(ncat)))
    keys = bidx * ncat + np.fromiter(map(code.__getitem__, vals), dtype=np.int64, count=len(vals))
    uniq, first, cnt = np.unique(keys, return_index=True, return_counts=True)
    b_of = uniq // ncat
    order = np.lexsort((first, b_of))
    uniq, b_of = uniq[order], b_of[order]
    names = list(index) if labels is None else [labels[v] for v in index]
    cats = list(map(names.__getitem__, (uniq - b_of * ncat).tolist()))
    counts = cnt[order].tolist()
    for b, a, e in zip(*_groups(b_of)):
        if e - a <= MAX_CATEGORIES_PER_BUCKET:
            _hist(out[b], name).cat = dict(zip(cats[a:e], counts[a:e]))
        else:
            _hist(out[b], name).cat = bound_categories(Counter(dict(zip(cats[a:e], counts[a:e]))))


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
                    counters[("features_untracked", "over_limit")] += 1
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
    for name in dict.fromkeys((*num, *cat, *missing)):
        fh = FeatureHist(missing=missing.get(name, 0))
        vals = num.get(name)
        if vals:
            idx, cnt = np.unique(feature_bin(np.asarray(vals, dtype=np.float64)), return_counts=True)
            fh.num = dict(zip(idx.tolist(), cnt.tolist()))
        if name in cat:
            fh.cat = bound_categories(cat[name])
        stats.features[name] = fh


__all__ = ["feature_hists", "bound_categories", "count_undeclared", "MAX_CATEGORY_LEN", "MAX_CATEGORIES_PER_BUCKET",
           "OTHER"]
