"""One batch's moves between label states, as columns, turned into bucket deltas in a few vectorised steps.

The engine records each move (a prediction entering, leaving or changing label state), each label delay and
each prediction's feature dict against a bucket index; `deltas()` then builds every bucket's BucketStats with
numpy over the whole batch instead of per event, which is where replay spends its time otherwise.
"""

from __future__ import annotations

import mmap
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import chain, repeat
from typing import Any

import numpy as np

from .feature_hists import (  # noqa: F401 (re-exported: imported from here by the engine and tests)
    MAX_CATEGORIES_PER_BUCKET, MAX_CATEGORY_LEN, OTHER, _exact_bucket, bound_categories, count_undeclared,
    feature_hists)
from .flag_range import batch_ranges
from .grids import N_DELAY_BINS, N_SCORE_BINS, delay_bin, score_bin
from .rank_hist import batch_ranks
from .stats import LOG_EPS, SUM_NLL_NEG, SUM_NLL_POS, SUM_P2, BucketStats

NO_FEATURES: dict[str, Any] = {}
OUTCOME_BEFORE_PREDICTION = ("outcome_before_prediction", "")
"""Counter of joins whose outcome is stamped before its prediction (joined, label counted, delay not counted)."""


class Moves:
    """Columns of one batch's moves, delays and feature dicts, each tagged with a bucket index."""

    __slots__ = ("bucket", "state", "flag", "score", "sign", "d_bucket", "d_delay", "d_sign", "f_bucket",
                 "f_dicts", "slice_moves", "expired", "implicit", "at", "m_seq", "d_seq", "f_seq", "s_seq", "columns",
                 "t_bucket", "t_value", "t_own", "batch", "feature_columns")

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
        self.t_bucket: list[int] = []
        self.t_value: list[float] = []
        self.t_own: list[bool] = []
        self.batch: tuple[list[Any], list[str], list[bool]] | None = None
        """Set by the batch path, which numbers every event's moves by its index (`at`): the batch's events, their
        prediction ids and whether each is a prediction (handed on with the feature columns)."""
        self.feature_columns: tuple[Any, ...] | None = None
        """Set by `deltas()` on a batch-path batch whose feature dicts all hold the same names: (the rows' sequence
        numbers, their buckets, the names, a column of values per name, *batch), for core.feature_columns."""

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

    def threshold(self, b: int, value: float, own: bool) -> None:
        """A prediction counted in bucket b for the first time was flagged at `value` (its event's own threshold
        when `own`, else the config's): core.flag_range."""
        self.t_bucket.append(b)
        self.t_value.append(value)
        self.t_own.append(own)

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
        BucketStats holds views of its row (np.zeros is calloc: rows never written cost no memory). The dense
        score rows (hist/psum, ~125 kB a bucket) are lazy: each bucket gets its non-zero score bins, and the rows
        are built from them only if read; the store's chunk route never reads them (issue 18)."""
        nb = n_buckets
        cols = self._merged()
        conf = np.zeros((nb, 3, 2), dtype=np.int64)
        sums = np.zeros((nb, 3, 3), dtype=np.float64)
        delay = np.zeros((nb, N_DELAY_BINS), dtype=np.int64)
        fine = score_bin(cols.score)  # each move's fine score bin: the score histograms' and the ranking's
        cells, h, p = _scores(cols, conf, sums, fine) if len(cols.bucket) else _NO_CELLS
        if len(cols.d_bucket):
            _delays(cols, delay, counters)
        # row views, made in C; the dense score rows None: built from bins only when read (BucketStats.hist)
        out = list(map(BucketStats, conf, repeat(None, nb), repeat(None, nb), sums, delay))
        _set_score_bins(out, cells, h, p)
        if len(cols.bucket):
            for stats, rank in zip(out, batch_ranks(nb, cols.bucket, cols.state, cols.score, cols.sign, fine)):
                stats.rank = rank
        if len(cols.t_bucket):
            for stats, rng in zip(out, batch_ranges(nb, cols.t_bucket, cols.t_value, cols.t_own)):
                stats.flag_range = rng
        if cols.f_dicts:
            uniform = feature_hists(cols.f_bucket, cols.f_dicts, declared, max_features, out, counters)
            if uniform is not None and self.batch is not None:
                self.feature_columns = (np.asarray(cols.f_seq, dtype=np.int64), *uniform, *self.batch)
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
            self.f_seq, self.f_bucket, self.f_dicts, self.s_seq, self.slice_moves,
            np.asarray(self.t_bucket, dtype=np.int64), np.asarray(self.t_value, dtype=np.float64),
            np.asarray(self.t_own, dtype=bool))
        if not self.columns:
            return own
        parts = [own, *self.columns]
        m = stable_order(np.concatenate([c.m_seq for c in parts]))
        d = stable_order(np.concatenate([c.d_seq for c in parts]))
        f_seq = np.concatenate([np.asarray(c.f_seq, dtype=np.int64) for c in parts])  # the batch path's: arrays
        f = stable_order(f_seq)
        s = stable_order(np.asarray(list(chain.from_iterable(c.s_seq for c in parts)), dtype=np.int64))

        def cat(name: str, order: np.ndarray) -> np.ndarray:
            return np.concatenate([getattr(c, name) for c in parts])[order]

        def seq(name: str, order: np.ndarray) -> list[Any]:
            items = list(chain.from_iterable(getattr(c, name) for c in parts))
            return list(map(items.__getitem__, order.tolist()))

        return MoveColumns(cat("m_seq", m), cat("bucket", m), cat("state", m), cat("flag", m), cat("score", m),
                           cat("sign", m), cat("d_seq", d), cat("d_bucket", d), cat("d_delay", d), cat("d_sign", d),
                           f_seq[f], seq("f_bucket", f), seq("f_dicts", f), seq("s_seq", s),
                           seq("slice_moves", s), *(np.concatenate([getattr(c, k) for c in parts])
                                                    for k in ("t_bucket", "t_value", "t_own")))


def stable_order(keys: np.ndarray) -> np.ndarray:
    """np.argsort(keys, kind="stable") of int64 keys: when they are distinct and span a range of at most a few times
    their number (a batch's sequence numbers: events · SEQ, every move of the batch path numbered apart), the keys
    are marked on that range and read back in order with each one's position (O(n + range), no comparisons: the
    paired outcomes' numbers come in their predictions' order, so the sort had few runs to merge); ties (an event
    of the per-event engine moving twice under one number), a wide range, or keys already in a few ascending runs
    (the sort merges those in a few linear passes: a batch whose outcomes join stored predictions) take the sort."""
    n = len(keys)
    if n < _COUNTED_FROM or int(np.count_nonzero(keys[1:] < keys[:-1])) < _FEW_RUNS:
        return np.argsort(keys, kind="stable")
    lo = int(keys.min())
    span = int(keys.max()) - lo + 1
    if span > _SPAN_PER_KEY * n:
        return np.argsort(keys, kind="stable")
    at = keys - lo
    present = np.zeros(span, dtype=bool)
    present[at] = True
    placed = np.flatnonzero(present)  # the distinct keys, ascending
    if len(placed) != n:  # a key repeated: the stable sort keeps their order
        return np.argsort(keys, kind="stable")
    position = np.empty(span, dtype=np.intp)
    position[at] = np.arange(n, dtype=np.intp)
    return position[placed]


_COUNTED_FROM = 64
"""Fewer keys than this are sorted (the counting steps' fixed cost is more than the sort's)."""
_FEW_RUNS = 64
"""Keys with fewer descents than this (so at most this many ascending runs) are sorted, not counted."""
_SPAN_PER_KEY = 16
"""stable_order counts keys whose range is at most this many times their number (else it sorts them)."""


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
    f_seq: Sequence[int]
    f_bucket: list[int]
    f_dicts: list[dict[str, Any]]
    s_seq: list[int]
    slice_moves: list[tuple[int, str, str, int, int, int]]
    t_bucket: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """Thresholds of the predictions counted (in any order: only their min and max per bucket are kept):
    bucket index, threshold, whether it was the event's own (core.flag_range)."""
    t_value: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float64))
    t_own: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))


def _scores(c: MoveColumns, conf: np.ndarray, sums: np.ndarray,
            fine: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Confusion cells, fine score histograms and score sums of every bucket, each in one numpy step: the flat
    index bucket·(3·bins) + state·bins + bin of a move (`fine`: the moves' score_bin) is its cell in (buckets, 3,
    bins) dense rows. Returns the score cells moved (sorted flat indexes) with their counts and score sums (every
    other cell is zero)."""
    nb = len(conf)
    bk, st, sc, sg = c.bucket, c.state, c.score, c.sign
    conf[:] = _summed(bk * 6 + st * 2 + c.flag, sg, nb * 6).reshape(nb, 3, 2)
    p = np.clip(sc, LOG_EPS, 1.0 - LOG_EPS)
    cell = bk * 3 + st
    flat = sums.reshape(nb * 3, 3)
    flat[:, SUM_P2] = np.bincount(cell, weights=sg * sc * sc, minlength=nb * 3)
    flat[:, SUM_NLL_POS] = np.bincount(cell, weights=sg * -np.log(p), minlength=nb * 3)
    flat[:, SUM_NLL_NEG] = np.bincount(cell, weights=sg * -np.log1p(-p), minlength=nb * 3)
    keys, inv = np.unique(bk * (3 * N_SCORE_BINS) + st * N_SCORE_BINS + fine, return_inverse=True)
    return keys, np.rint(np.bincount(inv, weights=sg)).astype(np.int64), np.bincount(inv, weights=sg * sc)


_NO_CELLS = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))
"""_scores' answer for a batch without moves (never written: slices of it are bins, read only)."""


def _set_score_bins(out: list[BucketStats], cells: np.ndarray, h: np.ndarray, p: np.ndarray) -> None:
    """Give each bucket its non-zero score bins (BucketStats.bins) from the batch's moved cells (sorted flat
    indexes, their counts and sums), found for all buckets at once: serialising and merging a bucket never need
    its dense rows, which are built from these only when read."""
    keep = (h != 0) | (p != 0)
    cells, h, p = cells[keep], h[keep], p[keep]
    row = 3 * N_SCORE_BINS
    owner = cells // row
    local = (cells - owner * row).astype(np.int32)
    ends = np.searchsorted(owner, np.arange(len(out) + 1)).tolist()
    for stats, lo, hi in zip(out, ends, ends[1:]):
        stats.bins = (local[lo:hi], h[lo:hi], p[lo:hi])


def _fresh_zeros(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    """np.zeros(shape, dtype) in fresh anonymous memory when large: the kernel's zero pages, so nothing is memset
    and pages never written (most fine score bins of most buckets) never materialise; calloc would clear all of it
    whenever the allocator reuses freed heap (every batch after the first). The mapping is private: mmap's default
    (MAP_SHARED) is shared memory, whose page faults cost more CPU time (~40 % of Moves.deltas' score step) and
    whose pages take the kernel's shared-memory path when unmapped."""
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    if size < _FRESH_BYTES:
        return np.zeros(shape, dtype=dtype)
    return np.frombuffer(mmap.mmap(-1, size, flags=_PRIVATE), dtype=dtype).reshape(shape)


_FRESH_BYTES = 1 << 20
"""Arrays from this size on come from their own anonymous mapping (smaller ones from np.zeros)."""
_PRIVATE = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS


def _delays(cols: MoveColumns, delay: np.ndarray, counters: Counter[tuple[str, str]]) -> None:
    """Add the label delays to the per-bucket histograms. A delay below 0 (an outcome stamped before its
    prediction: a producer clock or a field holding another time) is left out, so it cannot pull the delay
    quantiles and the report's maturity period towards 0; each join made with one is counted instead
    (OUTCOME_BEFORE_PREDICTION). Removals (sign -1) are left out by the same rule, so corrections stay balanced."""
    early = cols.d_delay < 0
    if early.any():
        counters[OUTCOME_BEFORE_PREDICTION] += int(np.count_nonzero(early & (cols.d_sign > 0)))
        keep = ~early
        bucket, seconds, sign = cols.d_bucket[keep], cols.d_delay[keep], cols.d_sign[keep]
    else:
        bucket, seconds, sign = cols.d_bucket, cols.d_delay, cols.d_sign
    if len(bucket):
        key = bucket * N_DELAY_BINS + delay_bin(seconds)
        delay[:] = _summed(key, sign, delay.size).reshape(delay.shape)


def _summed(index: np.ndarray, signs: np.ndarray, size: int) -> np.ndarray:
    """Integer sums of ±1 signs per flat index (a dense array of `size`)."""
    return np.rint(np.bincount(index, weights=signs, minlength=size)).astype(np.int64)


__all__ = ["Moves", "MoveColumns", "stable_order", "feature_hists", "bound_categories", "MAX_CATEGORY_LEN",
           "NO_FEATURES"]
