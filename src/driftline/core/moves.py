"""One batch's moves between label states, as columns, turned into bucket deltas in a few vectorised steps.

The engine records each move (a prediction entering, leaving or changing label state), each label delay and
each prediction's feature dict against a bucket index; `deltas()` then builds every bucket's BucketStats with
numpy over the whole batch instead of per event, which is where replay spends its time otherwise.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np

from .limits import MAX_UNDECLARED_NAMES, UNDECLARED_COUNTER
from .grids import N_DELAY_BINS, N_FEATURE_BINS, N_SCORE_BINS, delay_bin, feature_bin, score_bin
from .stats import LOG_EPS, SUM_NLL_NEG, SUM_NLL_POS, SUM_P2, BucketStats, FeatureHist

MAX_CATEGORIES_PER_BUCKET = 1000
MAX_CATEGORY_LEN = 200
OTHER = "__other__"
_ABSENT: Any = object()
_NUMERIC = {float, int}
_BOOL_NAMES = {True: "true", False: "false"}
NO_FEATURES: dict[str, Any] = {}


class Moves:
    """Columns of one batch's moves, delays and feature dicts, each tagged with a bucket index."""

    __slots__ = ("bucket", "state", "flag", "score", "sign", "d_bucket", "d_delay", "d_sign", "f_bucket",
                 "f_dicts", "slice_moves", "expired", "implicit", "at", "m_seq", "d_seq", "f_seq", "s_seq", "columns")

    def __init__(self) -> None:
        self.bucket: list[int] = []
        self.state: list[int] = []
        self.flag: list[bool] = []
        self.score: list[float] = []
        self.sign: list[int] = []
        self.d_bucket: list[int] = []
        self.d_delay: list[float] = []
        self.d_sign: list[int] = []
        self.f_bucket: list[int] = []
        self.f_dicts: list[dict[str, Any]] = []
        self.slice_moves: list[tuple[int, str, str, int, int, int]] = []
        self.expired: Counter[int] = Counter()
        self.implicit: Counter[int] = Counter()
        self.at = 0
        """Sequence number of the event being applied (set by the batch path; 0 otherwise)."""
        self.m_seq: list[int] = []
        self.d_seq: list[int] = []
        self.f_seq: list[int] = []
        self.s_seq: list[int] = []
        self.columns: list[MoveColumns] = []
        """Moves computed as arrays by the batch path (core/batch.py), merged in sequence order by `deltas()`."""

    def move(self, b: int, state: int, flagged: bool, score: float, sign: int,
             slice_values: dict[str, str] | None = None) -> None:
        """A prediction of bucket b enters (sign +1) or leaves (-1) a label state."""
        if slice_values:
            for name, value in slice_values.items():
                self.slice_moves.append((b, name, value, state, int(flagged), sign))
                self.s_seq.append(self.at)
        self.m_seq.append(self.at)
        self.bucket.append(b)
        self.state.append(state)
        self.flag.append(flagged)
        self.score.append(score)
        self.sign.append(sign)

    def delay(self, b: int, seconds: float, sign: int = 1) -> None:
        self.d_seq.append(self.at)
        self.d_bucket.append(b)
        self.d_delay.append(seconds)
        self.d_sign.append(sign)

    def features(self, b: int, feats: dict[str, Any] | None) -> None:
        self.f_seq.append(self.at)
        self.f_bucket.append(b)
        self.f_dicts.append(feats or NO_FEATURES)

    # --- materialisation ---------------------------------------------------------------------
    def deltas(self, n_buckets: int, declared: Sequence[str], max_features: int,
               counters: Counter[tuple[str, str]]) -> list[BucketStats]:
        """One BucketStats per bucket index (feature-tracking refusals are added to `counters`).

        Each kind of array is one allocation for the whole batch, filled in one step, and every bucket's
        BucketStats holds views of its row (np.zeros is calloc: rows never written cost no memory)."""
        nb = n_buckets
        cols = self._merged()
        conf = np.zeros((nb, 3, 2), dtype=np.int64)
        hist = np.zeros((nb, 3, N_SCORE_BINS), dtype=np.int64)
        psum = np.zeros((nb, 3, N_SCORE_BINS), dtype=np.float64)
        sums = np.zeros((nb, 3, 3), dtype=np.float64)
        delay = np.zeros((nb, N_DELAY_BINS), dtype=np.int64)
        if len(cols.bucket):
            _scores(cols, conf, hist, psum, sums)
        if len(cols.d_bucket):
            key = cols.d_bucket * N_DELAY_BINS + delay_bin(cols.d_delay)
            delay[:] = _summed(key, cols.d_sign, nb * N_DELAY_BINS).reshape(nb, -1)
        out = [BucketStats(conf[i], hist[i], psum[i], sums[i], delay[i]) for i in range(nb)]
        if cols.f_dicts:
            feature_hists(cols.f_bucket, cols.f_dicts, declared, max_features, out, counters)
        for b, n in self.expired.items():
            out[b].expired += n
        for b, n in self.implicit.items():
            out[b].implicit += n
        for b, name, value, state, flagged, sign in cols.slice_moves:
            per = out[b].slices.setdefault(name, {})
            cell = per.get(value)
            if cell is None:
                cell = per[value] = np.zeros((3, 2), dtype=np.int64)
            cell[state, flagged] += sign
        for stats in out:
            for name in list(stats.slices):
                kept = {v: c for v, c in stats.slices[name].items() if c.any()}
                if kept:
                    stats.slices[name] = kept
                else:
                    del stats.slices[name]
        return out

    def _merged(self) -> MoveColumns:
        """All moves as arrays in sequence order: the recorded lists, merged with the batch path's columns by a
        stable sort on sequence numbers, so every sum adds its terms in the order the per-event engine would."""
        own = MoveColumns(
            np.asarray(self.m_seq, dtype=np.int64), np.asarray(self.bucket, dtype=np.int64),
            np.asarray(self.state, dtype=np.int64), np.asarray(self.flag, dtype=np.int64),
            np.asarray(self.score, dtype=np.float64), np.asarray(self.sign, dtype=np.float64),
            np.asarray(self.d_seq, dtype=np.int64), np.asarray(self.d_bucket, dtype=np.int64),
            np.asarray(self.d_delay, dtype=np.float64), np.asarray(self.d_sign, dtype=np.float64),
            self.f_seq, self.f_bucket, self.f_dicts, self.s_seq, self.slice_moves)
        if not self.columns:
            return own
        parts = [own, *self.columns]
        m = np.argsort(np.concatenate([c.m_seq for c in parts]), kind="stable")
        d = np.argsort(np.concatenate([c.d_seq for c in parts]), kind="stable")
        f = np.argsort(np.asarray(list(chain.from_iterable(c.f_seq for c in parts)), dtype=np.int64), kind="stable")
        s = np.argsort(np.asarray(list(chain.from_iterable(c.s_seq for c in parts)), dtype=np.int64), kind="stable")

        def cat(name: str, order: np.ndarray) -> np.ndarray:
            return np.concatenate([getattr(c, name) for c in parts])[order]

        def seq(name: str, order: np.ndarray) -> list[Any]:
            items = list(chain.from_iterable(getattr(c, name) for c in parts))
            return [items[i] for i in order.tolist()]

        return MoveColumns(cat("m_seq", m), cat("bucket", m), cat("state", m), cat("flag", m), cat("score", m),
                           cat("sign", m), cat("d_seq", d), cat("d_bucket", d), cat("d_delay", d), cat("d_sign", d),
                           seq("f_seq", f), seq("f_bucket", f), seq("f_dicts", f), seq("s_seq", s),
                           seq("slice_moves", s))


@dataclass(slots=True)
class MoveColumns:
    """Moves, delays, feature dicts and slice moves of many events as columns, each with its sequence number."""

    m_seq: np.ndarray
    bucket: np.ndarray
    state: np.ndarray
    flag: np.ndarray
    score: np.ndarray
    sign: np.ndarray
    d_seq: np.ndarray
    d_bucket: np.ndarray
    d_delay: np.ndarray
    d_sign: np.ndarray
    f_seq: list[int]
    f_bucket: list[int]
    f_dicts: list[dict[str, Any]]
    s_seq: list[int]
    slice_moves: list[tuple[int, str, str, int, int, int]]


def _scores(c: MoveColumns, conf: np.ndarray, hist: np.ndarray, psum: np.ndarray, sums: np.ndarray) -> None:
    """Confusion cells, fine score histograms and score sums of every bucket, each in one numpy step: the flat
    index bucket·(3·bins) + state·bins + bin of a move is its cell in the (buckets, 3, bins) arrays."""
    nb = len(conf)
    bk, st, sc, sg = c.bucket, c.state, c.score, c.sign
    conf[:] = _summed(bk * 6 + st * 2 + c.flag, sg, nb * 6).reshape(nb, 3, 2)
    p = np.clip(sc, LOG_EPS, 1.0 - LOG_EPS)
    cell = bk * 3 + st
    flat = sums.reshape(nb * 3, 3)
    flat[:, SUM_P2] = np.bincount(cell, weights=sg * sc * sc, minlength=nb * 3)
    flat[:, SUM_NLL_POS] = np.bincount(cell, weights=sg * -np.log(p), minlength=nb * 3)
    flat[:, SUM_NLL_NEG] = np.bincount(cell, weights=sg * -np.log1p(-p), minlength=nb * 3)
    keys, inv = np.unique(bk * (3 * N_SCORE_BINS) + st * N_SCORE_BINS + score_bin(sc), return_inverse=True)
    hist.reshape(-1)[keys] = np.rint(np.bincount(inv, weights=sg)).astype(np.int64)
    psum.reshape(-1)[keys] = np.bincount(inv, weights=sg * sc)


def _summed(index: np.ndarray, signs: np.ndarray, size: int) -> np.ndarray:
    """Integer sums of ±1 signs per flat index (a dense array of `size`)."""
    return np.rint(np.bincount(index, weights=signs, minlength=size)).astype(np.int64)


# --- feature histograms ------------------------------------------------------------------------
def count_undeclared(counters: Counter[tuple[str, str]], name: str) -> None:
    """Count one refused occurrence of an undeclared feature name by name, for at most MAX_UNDECLARED_NAMES
    distinct names per batch (the store applies the same bound across batches)."""
    key = (UNDECLARED_COUNTER, name)
    if key in counters or sum(1 for n, _ in counters if n == UNDECLARED_COUNTER) < MAX_UNDECLARED_NAMES:
        counters[key] += 1


# --- feature histograms ------------------------------------------------------------------------
def feature_hists(buckets: list[int], dicts: list[dict[str, Any]], declared: Sequence[str], max_features: int,
                  out: list[BucketStats], counters: Counter[tuple[str, str]]) -> None:
    """Each bucket's feature histograms from its predictions' feature dicts.

    Per bucket (and batch), the first `max_features` feature names seen are tracked; undeclared names (when
    features are declared) and names over that bound are refused, each occurrence counted. The common case (no
    refusal) is computed per feature name over the whole batch; otherwise the exact per-event rule applies.
    """
    decl = frozenset(declared)
    per_bucket: dict[int, list[dict[str, Any]]] = {}
    for b, d in zip(buckets, dicts):
        lst = per_bucket.get(b)
        if lst is None:
            per_bucket[b] = [d]
        else:
            lst.append(d)
    simple = True
    names: dict[str, None] = {}
    for lst in per_bucket.values():
        seen = dict.fromkeys(chain.from_iterable(lst))
        if len(seen) > max_features or (decl and not decl.issuperset(seen)):
            simple = False
            break
        names.update(seen)
    if not simple:
        for b, lst in per_bucket.items():
            _exact_bucket(lst, declared, max_features, out[b], counters)
        return
    bidx = np.asarray(buckets, dtype=np.int64)
    for name in (*declared, *(n for n in names if n not in decl)):
        _one_feature(name, bidx, buckets, [d.get(name, _ABSENT) for d in dicts], out, bool(decl))


def _one_feature(name: str, bidx: np.ndarray, buckets: list[int], vals: list[Any], out: list[BucketStats],
                 declared: bool) -> None:
    """One feature over the whole batch: fine numeric bins, category counts and missing counts per bucket."""
    types = set(map(type, vals))
    if types <= _NUMERIC:
        _numeric(name, bidx, np.asarray(vals, dtype=np.float64), out)
    elif types == {str} and max(map(len, vals)) <= MAX_CATEGORY_LEN:
        _categories(name, Counter(zip(buckets, vals)), out)
    elif types == {bool}:  # what the general loop below does with booleans, in C
        _categories(name, Counter(zip(buckets, map(_BOOL_NAMES.__getitem__, vals))), out)
    else:
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
    keys = bidx * N_FEATURE_BINS + feature_bin(values)
    uniq, cnt = np.unique(keys, return_counts=True)
    b_of = uniq // N_FEATURE_BINS
    bins = uniq - b_of * N_FEATURE_BINS
    starts = np.flatnonzero(np.r_[True, b_of[1:] != b_of[:-1]])
    ends = np.r_[starts[1:], len(uniq)]
    for a, e in zip(starts.tolist(), ends.tolist()):
        b = int(b_of[a])
        _hist(out[b], name).num = dict(zip(bins[a:e].tolist(), cnt[a:e].tolist()))


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


__all__ = ["Moves", "MoveColumns", "feature_hists", "bound_categories", "MAX_CATEGORY_LEN", "NO_FEATURES"]
