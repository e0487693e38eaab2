"""Ranking histograms: per bucket, the labelled predictions' counts on the fine ranking grid (grids.rank_bin), kept
sparse as sorted (key, count) arrays, key = label row · N_RANK_BINS + ranking bin (row 0 negatives, row 1
positives: stats.NEG and stats.POS). They give ROC AUC and average precision bounds 16 × tighter than the score
histograms, from a window's buckets alone (readouts.ranking), without reading the join rows.

A bucket's ranking histogram is None ("unknown") when it was stored before they existed and already held labels;
such a bucket makes its window fall back to the score histograms. Arrays are never written in place (they may be
read-only views of a stored blob), so a rank can be shared between copies."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .grids import N_RANK_BINS, rank_bin

Rank = tuple[np.ndarray, np.ndarray]
"""(sorted distinct int32 keys, their non-zero int64 counts)."""
RANK_ROWS = 2
"""Label rows of a ranking histogram: negatives (0) and positives (1), as stats.NEG and stats.POS."""
LABELLED_SUMS = 6
"""The labelled rows (NEG, POS) of a bucket's flat "sums" (3 label states × 3 sums: stats.SUM_*)."""
RANK_ROW = RANK_ROWS * N_RANK_BINS
"""Keys of one bucket's ranking histogram: a batch numbers its buckets' keys bucket·RANK_ROW + key."""


_DENSE_FROM = RANK_ROW // 4
"""rank_sum adds this many entries or more on the dense grid (float64 weights: exact for counts below 2⁵³)."""


def empty_rank() -> Rank:
    """The ranking histogram of a bucket without labelled predictions."""
    return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int64)


def rank_sum(parts: Sequence[Rank | None]) -> Rank | None:
    """Sum of ranking histograms (counts added per key, zero sums dropped); None when any part is unknown."""
    if any(p is None for p in parts):
        return None
    known = [p for p in parts if p is not None and len(p[0])]
    if len(known) <= 1:
        return known[0] if known else empty_rank()
    keys = np.concatenate([k for k, _ in known])
    counts = np.concatenate([c for _, c in known]).astype(np.int64, copy=False)
    return summed(keys, counts)


def summed(keys: np.ndarray, counts: np.ndarray) -> Rank:
    """Counts added per key (keys in [0, RANK_ROW), in any order, repeated), zero sums dropped: a ranking
    histogram."""
    if len(keys) > _DENSE_FROM:  # a window's many buckets: one O(n) pass over the dense grid instead of a sort
        dense = np.rint(np.bincount(keys, weights=counts, minlength=RANK_ROW)).astype(np.int64)
        nz = np.flatnonzero(dense)
        return nz.astype(np.int32), dense[nz]
    keys, sums = _sorted_sum(keys, counts)
    return keys.astype(np.int32), sums


def batch_ranks(n_buckets: int, bucket: np.ndarray, state: np.ndarray, score: np.ndarray, sign: np.ndarray,
                fine: np.ndarray | None = None) -> list[Rank]:
    """Each bucket's ranking-histogram delta from a batch's score moves (bucket, label state, score, ±1): moves in
    the unlabelled state (2) have no ranking row. `fine`: the moves' grids.score_bin, when known already."""
    lab = np.flatnonzero(np.asarray(state) < RANK_ROWS)
    if not len(lab):
        return [empty_rank() for _ in range(n_buckets)]
    bk = np.asarray(bucket, dtype=np.int64)[lab]
    ranked = rank_bin(np.asarray(score)[lab], None if fine is None else fine[lab])
    keys = bk * RANK_ROW + np.asarray(state, dtype=np.int64)[lab] * N_RANK_BINS + ranked
    uniq, inv = np.unique(keys, return_inverse=True)
    counts = np.rint(np.bincount(inv.ravel(), weights=np.asarray(sign, dtype=np.float64)[lab])).astype(np.int64)
    keep = counts != 0
    uniq, counts = uniq[keep], counts[keep]
    owner = uniq // RANK_ROW
    local = (uniq - owner * RANK_ROW).astype(np.int32)
    ends = np.searchsorted(owner, np.arange(n_buckets + 1)).tolist()
    return [(local[lo:hi], counts[lo:hi]) for lo, hi in zip(ends, ends[1:])]


def rank_rows(rank: Rank) -> tuple[np.ndarray, np.ndarray]:
    """(negative counts, positive counts) per ranking bin, dense (N_RANK_BINS each)."""
    dense = np.zeros(RANK_ROW, dtype=np.int64)
    dense[rank[0]] = rank[1]
    return dense[:N_RANK_BINS], dense[N_RANK_BINS:]


def rank_from_doc(doc: dict[str, Any], labelled_before: int) -> Rank | None:
    """A stored bucket's ranking histogram: its "ri"/"rc" arrays; empty when it has none and held no labels (an
    older bucket: nothing to rank yet); None (unknown) when it has none but held labels, or they are malformed."""
    raw = stored_rank(doc, labelled_before)
    if raw is None:
        return None
    keys = np.frombuffer(raw[0], dtype=np.int32)
    if keys.size and (int(keys.min()) < 0 or int(keys.max()) >= RANK_ROW):
        return None
    return keys, raw[1]


_WIDTHS = {2: np.int16, 4: np.int32, 8: np.int64}
"""Bytes per stored count → its type: a bucket's counts are stored in the narrowest that holds them all (most
ranking bins of an hourly bucket hold a handful of predictions), the width read back from the two lengths."""


def rank_into_doc(doc: dict[str, Any], rank: Rank | None) -> None:
    """Set (or, for an unknown rank, remove) a bucket document's "ri" (int32 keys) and "rc" (counts, as int16,
    int32 or int64: the narrowest holding every one) arrays, and "rs": the labelled rows of its "sums" (set
    first) they were written with. A writer that knows no ranking histograms keeps all three as they were while
    it moves labels, which changes those sums (every score adds to Σp², Σ−ln p or Σ−ln(1−p)): the two then
    differ and the ranking histogram reads as unknown (stored_rank), even where its fine-bin totals still agree."""
    if rank is None:
        for key in ("ri", "rc", "rs"):
            doc.pop(key, None)
        return
    counts = rank[1]
    lo, hi = (int(counts.min()), int(counts.max())) if counts.size else (0, 0)
    kind = np.int16 if -2**15 <= lo and hi < 2**15 else np.int32 if -2**31 <= lo and hi < 2**31 else np.int64
    doc["ri"], doc["rc"] = rank[0].astype(np.int32, copy=False).tobytes(), counts.astype(kind).tobytes()
    doc["rs"] = list(doc["sums"][:LABELLED_SUMS])


def labelled_in_conf(conf: Sequence[int] | np.ndarray) -> int:
    """Labelled predictions of a bucket's confusion counts, flat or (3, 2) (rows NEG and POS: the first four); a
    decoded list of ints summed as it is (a window query reads it for each of its hundreds of buckets)."""
    if type(conf) is list and len(conf) == 6:
        try:
            labelled = sum(conf[:2 * RANK_ROWS])
        except TypeError:  # a damaged blob (text counts): numpy's conversion below refuses it as every route does
            labelled = None
        if type(labelled) is int:
            return labelled
    return int(np.asarray(conf, dtype=np.int64).ravel()[:2 * RANK_ROWS].sum())


def stored_rank(doc: dict[str, Any], labelled_before: int) -> tuple[bytes, np.ndarray] | None:
    """A stored bucket's "ri" bytes (keys unchecked) and its counts as int64: empty for an older bucket without
    labels; None where rank_from_doc gives None for the form (absent with labels held, wrong types or lengths)
    or the labels moved since it was written ("rs" no longer the labelled rows of "sums": rank_into_doc)."""
    raw = stored_rank_parts(doc.get("ri"), doc.get("rc"), doc.get("rs"), doc.get("sums"), labelled_before)
    if raw is None:
        return None
    ri, rc, kind = raw
    return ri, np.frombuffer(rc, dtype=kind).astype(np.int64)


def stored_rank_parts(ri: Any, rc: Any, rs: Any, sums: Any, labelled_before: int) -> tuple[bytes, bytes, Any] | None:
    """stored_rank's checks on a document's "ri", "rc", "rs" and "sums" values as they are (None: absent), before
    any numpy call: (ri, rc, the counts' dtype), or None exactly where stored_rank gives None; a window's counts
    are then converted in one call (window_sum)."""
    if ri is None and rc is None:
        return (b"", b"", np.int64) if labelled_before == 0 else None
    if type(ri) is not bytes or type(rc) is not bytes or len(ri) % 4:
        return None
    if type(rs) is not list or type(sums) is not list or rs != sums[:LABELLED_SUMS]:
        return None
    n = len(ri) // 4  # the counts' width from the two lengths
    kind = _WIDTHS.get(len(rc) // n) if n and len(rc) % n == 0 else (np.int64 if not rc else None)
    return None if kind is None else (ri, rc, kind)


def _sorted_sum(keys: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct keys in order and their summed counts, zero sums dropped (one stable sort)."""
    if not keys.size:
        return keys, counts.astype(np.int64)
    order = np.argsort(keys, kind="stable")
    keys, counts = keys[order], counts[order]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    sums = np.add.reduceat(counts, starts)
    keep = sums != 0
    return keys[starts][keep], sums[keep]


def ranks_added(stored: Sequence[tuple[bytes, np.ndarray] | None], deltas: Sequence[Rank | None],
                encoded: bool = False) -> list[Any] | None:
    """rank_sum((stored j, delta j)) for every bucket of a chunk in one sort (the store's write of a batch touches
    hundreds of buckets; numpy calls per bucket cost more than their arithmetic). Stored histograms come as
    stored_rank gives them (None: unknown). The same arrays as rank_sum wherever every histogram is in the form it
    keeps as it is (keys strictly increasing and in range, counts non-zero); None otherwise (the per-bucket route
    then decides). `encoded`: each sum as rank_into_doc's ("ri", "rc") bytes instead (_encoded_runs)."""
    n = len(stored)
    if n == 0:
        return []
    ok = [s is not None and d is not None for s, d in zip(stored, deltas)]
    old = [s if k and s is not None else (b"", np.zeros(0, dtype=np.int64)) for s, k in zip(stored, ok)]
    new = [d if k and d is not None else empty_rank() for d, k in zip(deltas, ok)]
    offsets = np.arange(n, dtype=np.int64) * RANK_ROW
    old_keys = np.frombuffer(b"".join([s[0] for s in old]), dtype=np.int32).astype(np.int64)
    new_keys = np.concatenate([d[0] for d in new]).astype(np.int64)
    old_sizes, new_sizes = [len(s[0]) // 4 for s in old], [len(d[0]) for d in new]
    c_old = np.concatenate([s[1] for s in old])
    c_new = np.concatenate([d[1] for d in new]).astype(np.int64, copy=False)
    if not (in_order(old_keys, old_sizes, RANK_ROW) and in_order(new_keys, new_sizes, RANK_ROW)
            and c_old.all() and c_new.all()):
        return None
    g_old = old_keys + np.repeat(offsets, old_sizes)
    g_new = new_keys + np.repeat(offsets, new_sizes)
    keys, sums = _pair_sum(np.concatenate((g_old, g_new)), np.concatenate((c_old, c_new)))
    owner = keys // RANK_ROW
    local = (keys - owner * RANK_ROW).astype(np.int32)
    ends = np.searchsorted(owner, np.arange(n + 1)).tolist()
    if encoded:
        return _encoded_runs(local, sums, ends, ok)
    return [(local[lo:hi], sums[lo:hi]) if k else None for k, lo, hi in zip(ok, ends, ends[1:])]


def _pair_sum(keys: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """_sorted_sum of keys in which each value occurs at most twice (two strictly increasing runs): each sum is its
    first count plus, for a key in both runs, the second (integers: the same sums in any order), without reduceat's
    per-key reduction (issue 18)."""
    if not keys.size:
        return keys, counts.astype(np.int64)
    order = np.argsort(keys, kind="stable")
    keys, counts = keys[order], counts[order]
    twice = np.empty(keys.size, dtype=bool)  # twice[i]: keys[i] equals keys[i + 1]
    twice[-1] = False
    np.equal(keys[1:], keys[:-1], out=twice[:-1])
    starts = np.flatnonzero(np.r_[True, ~twice[:-1]])
    sums = counts[starts]
    pairs = starts[twice[starts]]
    sums[twice[starts]] += counts[pairs + 1]
    keep = sums != 0
    return keys[starts][keep], sums[keep]


def _encoded_runs(local: np.ndarray, sums: np.ndarray, ends: list[int], ok: list[bool]
                  ) -> list[tuple[bytes, bytes] | None]:
    """rank_into_doc's ("ri", "rc") bytes of each run local[lo:hi], sums[lo:hi] (None where not ok): each run's
    counts in the narrowest of int16, int32 and int64 holding them all, its extremes found by one reduceat over
    the non-empty runs and the bytes of each width made once for the chunk, then sliced."""
    starts = np.asarray(ends[:-1], dtype=np.int64)
    filled = np.asarray(ends[1:], dtype=np.int64) > starts
    width = np.full(len(starts), 2, dtype=np.int64)  # an empty run: (0, 0) fits int16
    if sums.size:
        at = starts[filled]
        lo, hi = np.minimum.reduceat(sums, at), np.maximum.reduceat(sums, at)
        width[filled] = np.where((lo >= -2**15) & (hi < 2**15), 2, np.where((lo >= -2**31) & (hi < 2**31), 4, 8))
    widths = width.tolist()
    ri = local.astype(np.int32, copy=False).tobytes()
    rc = {w: sums.astype(kind).tobytes() for w, kind in _WIDTHS.items() if w in widths}
    return [(ri[a * 4:b * 4], rc[w][a * w:b * w]) if k else None
            for k, a, b, w in zip(ok, ends, ends[1:], widths)]


def in_order(idx: np.ndarray, sizes: list[int], size: int) -> bool:
    """Whether the concatenated per-bucket indexes (`sizes` of them each) are in [0, size) and strictly
    increasing within each bucket, as the writers store them (a repeated one would be added by a sum but
    assigned by a decode)."""
    if not idx.size:
        return True
    if idx.dtype.kind != "i":
        idx = idx.astype(np.int64)  # a difference of unsigned ints would wrap instead of going negative
    if int(idx.min()) < 0 or int(idx.max()) >= size:
        return False
    # Each step up within a bucket, every step into the next bucket allowed: the same answer as the steps of
    # idx + bucket·size, without building that int64 copy and its repeated offsets (two arrays of the window's
    # length, ~1/5 of a 7-day metrics query's CPU at 4.9 M events, much of it faulting in their fresh pages).
    up = np.diff(idx) > 0
    ends = np.cumsum(sizes)[:-1] - 1
    up[ends[(ends >= 0) & (ends < up.size)]] = True
    return bool(up.all())
