"""One batch's moves between label states, as columns, turned into bucket deltas in a few vectorised steps.

The engine records each move (a prediction entering, leaving or changing label state), each label delay and
each prediction's feature dict against a bucket index; `deltas()` then builds every bucket's BucketStats with
numpy over the whole batch instead of per event, which is where replay spends its time otherwise.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import chain
from typing import Any

import numpy as np

from .grids import N_DELAY_BINS, N_FEATURE_BINS, N_SCORE_BINS, delay_bin, feature_bin, score_bin
from .stats import LOG_EPS, SUM_NLL_NEG, SUM_NLL_POS, SUM_P2, BucketStats, FeatureHist

MAX_CATEGORIES_PER_BUCKET = 1000
MAX_CATEGORY_LEN = 200
OTHER = "__other__"
_ABSENT: Any = object()
_NUMERIC = {float, int}
NO_FEATURES: dict[str, Any] = {}


class Moves:
    """Columns of one batch's moves, delays and feature dicts, each tagged with a bucket index."""

    __slots__ = ("bucket", "state", "flag", "score", "sign", "d_bucket", "d_delay", "d_sign", "f_bucket",
                 "f_dicts", "slice_moves", "expired", "implicit")

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

    def move(self, b: int, state: int, flagged: bool, score: float, sign: int,
             slice_values: dict[str, str] | None = None) -> None:
        """A prediction of bucket b enters (sign +1) or leaves (-1) a label state."""
        if slice_values:
            for name, value in slice_values.items():
                self.slice_moves.append((b, name, value, state, int(flagged), sign))
        self.bucket.append(b)
        self.state.append(state)
        self.flag.append(flagged)
        self.score.append(score)
        self.sign.append(sign)

    def delay(self, b: int, seconds: float, sign: int = 1) -> None:
        self.d_bucket.append(b)
        self.d_delay.append(seconds)
        self.d_sign.append(sign)

    def features(self, b: int, feats: dict[str, Any] | None) -> None:
        self.f_bucket.append(b)
        self.f_dicts.append(feats or NO_FEATURES)

    # --- materialisation ---------------------------------------------------------------------
    def deltas(self, n_buckets: int, declared: Sequence[str], max_features: int,
               counters: Counter[tuple[str, str]]) -> list[BucketStats]:
        """One BucketStats per bucket index (feature-tracking refusals are added to `counters`)."""
        out = _blank(n_buckets)
        if self.bucket:
            self._scores(out)
        if self.d_bucket:
            bins = delay_bin(np.asarray(self.d_delay, dtype=np.float64))
            for b, idx, sg in _split(np.asarray(self.d_bucket), bins, np.asarray(self.d_sign, dtype=np.int64)):
                out[b].delay += np.bincount(idx, weights=sg, minlength=len(out[b].delay)).astype(np.int64)
        if self.f_dicts:
            feature_hists(self.f_bucket, self.f_dicts, declared, max_features, out, counters)
        for b, n in self.expired.items():
            out[b].expired += n
        for b, n in self.implicit.items():
            out[b].implicit += n
        for b, name, value, state, flagged, sign in self.slice_moves:
            per = out[b].slices.setdefault(name, {})
            conf = per.get(value)
            if conf is None:
                conf = per[value] = np.zeros((3, 2), dtype=np.int64)
            conf[state, flagged] += sign
        for stats in out:
            for name in list(stats.slices):
                kept = {v: c for v, c in stats.slices[name].items() if c.any()}
                if kept:
                    stats.slices[name] = kept
                else:
                    del stats.slices[name]
        return out

    def _scores(self, out: list[BucketStats]) -> None:
        """Confusion cells, fine score histograms and score sums of every bucket, in whole-batch numpy steps."""
        nb = len(out)
        bk = np.asarray(self.bucket, dtype=np.int64)
        st = np.asarray(self.state, dtype=np.int64)
        sc = np.asarray(self.score, dtype=np.float64)
        sg = np.asarray(self.sign, dtype=np.int64)
        conf = np.bincount(bk * 6 + st * 2 + np.asarray(self.flag, dtype=np.int64), weights=sg, minlength=nb * 6)
        conf = np.rint(conf).astype(np.int64).reshape(nb, 3, 2)
        p = np.clip(sc, LOG_EPS, 1.0 - LOG_EPS)
        cell = bk * 3 + st
        sums = np.zeros((nb * 3, 3))
        sums[:, SUM_P2] = np.bincount(cell, weights=sg * sc * sc, minlength=nb * 3)
        sums[:, SUM_NLL_POS] = np.bincount(cell, weights=sg * -np.log(p), minlength=nb * 3)
        sums[:, SUM_NLL_NEG] = np.bincount(cell, weights=sg * -np.log1p(-p), minlength=nb * 3)
        sums = sums.reshape(nb, 3, 3)
        width = 3 * N_SCORE_BINS
        keys, inv = np.unique(bk * width + st * N_SCORE_BINS + score_bin(sc), return_inverse=True)
        counts = np.rint(np.bincount(inv, weights=sg)).astype(np.int64)
        psums = np.bincount(inv, weights=sg * sc)
        owner = keys // width
        cells = keys - owner * width
        starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
        ends = np.r_[starts[1:], len(keys)]
        for a, e in zip(starts.tolist(), ends.tolist()):
            stats = out[int(owner[a])]
            stats.hist.ravel()[cells[a:e]] += counts[a:e]
            stats.psum.ravel()[cells[a:e]] += psums[a:e]
        for b, stats in enumerate(out):
            stats.conf += conf[b]
            stats.sums += sums[b]


def _blank(n: int) -> list[BucketStats]:
    """n empty BucketStats whose arrays are views into one allocation per kind (one calloc, not 5n)."""
    conf = np.zeros((n, 3, 2), dtype=np.int64)
    hist = np.zeros((n, 3, N_SCORE_BINS), dtype=np.int64)
    psum = np.zeros((n, 3, N_SCORE_BINS), dtype=np.float64)
    sums = np.zeros((n, 3, 3), dtype=np.float64)
    delay = np.zeros((n, N_DELAY_BINS), dtype=np.int64)
    return [BucketStats(conf[i], hist[i], psum[i], sums[i], delay[i]) for i in range(n)]


def _split_many(keys: np.ndarray, *cols: np.ndarray) -> list[tuple[int, tuple[np.ndarray, ...]]]:
    """Rows of `cols` grouped by key (stable), as (key, column slices) pairs."""
    order = np.argsort(keys, kind="stable")
    sk = keys[order]
    starts = np.flatnonzero(np.r_[True, sk[1:] != sk[:-1]])
    ends = np.r_[starts[1:], len(sk)]
    sorted_cols = [c[order] for c in cols]
    return [(int(sk[a]), tuple(c[a:e] for c in sorted_cols)) for a, e in zip(starts.tolist(), ends.tolist())]


def _split(keys: np.ndarray, idx: np.ndarray, weights: np.ndarray) -> list[tuple[int, np.ndarray, np.ndarray]]:
    return [(b, i, w) for b, (i, w) in _split_many(keys, idx, weights)]


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


__all__ = ["Moves", "feature_hists", "bound_categories", "MAX_CATEGORY_LEN", "NO_FEATURES"]
