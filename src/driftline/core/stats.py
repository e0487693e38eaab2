"""Mergeable sufficient statistics of one time bucket (or of a whole window, their sum).

Everything driftline reports is a function of these counts and sums, so a window is the sum of its
buckets, a late label moves one count between cells, and partial states from several processes merge
exactly (counts exactly; float sums up to rounding).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import msgspec
import numpy as np

from .feature_blob import decode_features, features_from_doc
from .feature_counts import FeatureHist, _feature_doc
from .flag_range import EMPTY, FlagRange, range_from_doc, range_into_doc, range_sum
from .grids import N_DELAY_BINS, N_RANK_BINS, N_SCORE_BINS, rank_bin
from .slice_bound import slices_doc
from .rank_hist import Rank, empty_rank, labelled_in_conf, rank_from_doc, rank_into_doc, rank_sum

NEG, POS, UNL = 0, 1, 2
"""Label states: row index into every per-label array."""
LABEL_STATES = (NEG, POS, UNL)
LOG_EPS = float(np.finfo(np.float64).eps)
"""Probabilities are clipped to [eps, 1 - eps] in log loss, as scikit-learn does."""

SUM_P2, SUM_NLL_POS, SUM_NLL_NEG = 0, 1, 2
"""Columns of `sums`: Σp², Σ−ln(p) and Σ−ln(1−p) (the last two clipped by LOG_EPS)."""


def absent_as_missing(fh: FeatureHist | None, predictions: int) -> FeatureHist | None:
    """The feature's histogram over a window of `predictions` with each prediction that lacked the key counted as
    missing (predictions − values recorded): a tracked feature that drops out upstream shows as missing whether it
    was declared (the engine already counts its absent keys) or inferred (it does not know them). None stays None
    when nothing is absent."""
    absent = predictions - (fh.total if fh is not None else 0)
    if absent <= 0:
        return fh
    out = fh.copy() if fh is not None else FeatureHist()
    out.missing += absent
    return out


def _zeros_i(*shape: int) -> np.ndarray:
    return np.zeros(shape, dtype=np.int64)


def _zeros_f(*shape: int) -> np.ndarray:
    return np.zeros(shape, dtype=np.float64)


_DEFAULT: Any = object()
"""BucketStats' default for hist/psum (fresh zeros) and rank (empty), told apart from an explicit None."""


@dataclass(slots=True, init=False)
class BucketStats:
    """Sufficient statistics of the predictions made in one bucket of prediction time.

    conf[label_state, flagged] counts predictions: conf[POS,1]=tp, conf[POS,0]=fn, conf[NEG,1]=fp,
    conf[NEG,0]=tn, conf[UNL,1]/conf[UNL,0] = flagged/unflagged still unlabelled.
    hist/psum: per label state, count and Σscore in each fine score bin (grids.SCORE_EDGES).
    sums: per label state, Σp², Σ−ln p, Σ−ln(1−p). delay: label-delay histogram (grids.DELAY_EDGES)
    of labelled predictions. features: per feature name, its FeatureHist (label-free).
    expired: unlabelled predictions that passed the label horizon (they stay in UNL).
    implicit: labels assigned by the implicit-negative policy (they are also in NEG).
    rank: the labelled predictions on the finer ranking grid (core.rank_hist; None: unknown, an older bucket).
    flag_range: the lowest and highest threshold its predictions were flagged at, and their sources
    (core.flag_range; None: unknown, an older bucket).
    """

    conf: np.ndarray = field(default_factory=lambda: _zeros_i(3, 2))
    _hist: np.ndarray | None = field(default_factory=lambda: _zeros_i(3, N_SCORE_BINS))
    """`hist`'s array; None (with `_psum`) for lazy rows: built from `bins` on first read (see `hist`)."""
    _psum: np.ndarray | None = field(default_factory=lambda: _zeros_f(3, N_SCORE_BINS))
    sums: np.ndarray = field(default_factory=lambda: _zeros_f(3, 3))
    delay: np.ndarray = field(default_factory=lambda: _zeros_i(N_DELAY_BINS))
    features: dict[str, FeatureHist] = field(default_factory=dict)
    expired: int = 0
    implicit: int = 0
    slices: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    """Per slice feature and value, a conf array like `conf` (for per-slice metrics)."""
    bins: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    """The non-zero score bins as (flat index int32, hist int64, psum float64), known by whoever built hist/psum
    (Moves.deltas) so serialising skips the dense scan; None when unknown. add/add_prediction reset it: whatever
    else writes hist or psum in place must reset it too (after reading hist or psum once: lazy rows are built
    from it)."""
    rank: Rank | None = field(default_factory=empty_rank)
    flag_range: FlagRange | None = EMPTY

    def __init__(self, conf: np.ndarray | None = None, hist: np.ndarray | None = _DEFAULT,
                 psum: np.ndarray | None = _DEFAULT, sums: np.ndarray | None = None, delay: np.ndarray | None = None,
                 features: dict[str, FeatureHist] | None = None, expired: int = 0, implicit: int = 0,
                 slices: dict[str, dict[str, np.ndarray]] | None = None,
                 bins: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None, rank: Rank | None = _DEFAULT,
                 flag_range: FlagRange | None = EMPTY) -> None:
        """The dataclass' fields, each defaulting to zeros or empty; hist and psum both None make lazy dense rows
        (built from `bins` when read: Moves.deltas' deltas), one of them None the other's lazy row."""
        self.conf = _zeros_i(3, 2) if conf is None else conf
        self._hist = _zeros_i(3, N_SCORE_BINS) if hist is _DEFAULT else hist
        self._psum = _zeros_f(3, N_SCORE_BINS) if psum is _DEFAULT else psum
        self.sums = _zeros_f(3, 3) if sums is None else sums
        self.delay = _zeros_i(N_DELAY_BINS) if delay is None else delay
        self.features = {} if features is None else features
        self.expired = expired
        self.implicit = implicit
        self.slices = {} if slices is None else slices
        self.bins = bins
        self.rank = empty_rank() if rank is _DEFAULT else rank
        self.flag_range = flag_range

    # --- dense score rows (lazy for Moves.deltas' deltas) -----------------------------------------
    @property
    def hist(self) -> np.ndarray:
        """Counts per label state and fine score bin, (3, N_SCORE_BINS) int64 (built from `bins` when lazy)."""
        if self._hist is None:
            self._dense()
        return self._hist  # type: ignore[return-value]

    @hist.setter
    def hist(self, value: np.ndarray) -> None:
        if self._psum is None:
            self._dense()  # psum's lazy row, while bins still says what it holds
        self._hist = value

    @property
    def psum(self) -> np.ndarray:
        """Σscore per label state and fine score bin, (3, N_SCORE_BINS) float64 (built from `bins` when lazy)."""
        if self._psum is None:
            self._dense()
        return self._psum  # type: ignore[return-value]

    @psum.setter
    def psum(self, value: np.ndarray) -> None:
        if self._hist is None:
            self._dense()  # hist's lazy row, while bins still says what it holds
        self._psum = value

    def _dense(self) -> None:
        """Build the lazy dense rows: zeros with `bins` scattered in, the very rows Moves.deltas used to write (its
        bins are every cell where hist or psum is non-zero, and bincount never sums to -0.0). The ~560 deltas of a
        replay batch whose rows nobody reads then never fault in their ~125 kB of pages each."""
        bins = self.bins
        if self._hist is None:
            hist = _zeros_i(3, N_SCORE_BINS)
            if bins is not None:
                hist.ravel()[bins[0]] = bins[1]
            self._hist = hist
        if self._psum is None:
            psum = _zeros_f(3, N_SCORE_BINS)
            if bins is not None:
                psum.ravel()[bins[0]] = bins[2]
            self._psum = psum

    def plain_rows(self) -> bool:
        """Whether hist/psum are int64/float64 of 3·N_SCORE_BINS cells (lazy rows are, and are not built here)."""
        hist, psum = self._hist, self._psum
        return ((hist is None or (hist.dtype == np.int64 and hist.size == 3 * N_SCORE_BINS))
                and (psum is None or (psum.dtype == np.float64 and psum.size == 3 * N_SCORE_BINS)))

    # --- derived counts -----------------------------------------------------------------------
    @property
    def predictions(self) -> int:
        return int(self.conf.sum())

    @property
    def tp(self) -> int:
        return int(self.conf[POS, 1])

    @property
    def fn(self) -> int:
        return int(self.conf[POS, 0])

    @property
    def fp(self) -> int:
        return int(self.conf[NEG, 1])

    @property
    def tn(self) -> int:
        return int(self.conf[NEG, 0])

    @property
    def unlabelled_flagged(self) -> int:
        return int(self.conf[UNL, 1])

    @property
    def unlabelled_unflagged(self) -> int:
        return int(self.conf[UNL, 0])

    # --- merging ------------------------------------------------------------------------------
    def add(self, other: BucketStats) -> BucketStats:
        """Add `other` into self in place and return self."""
        if self._hist is None or self._psum is None:
            self._dense()  # before bins is reset: the lazy rows are built from it
        self.bins = None
        self.conf += other.conf
        self.hist += other.hist
        self.psum += other.psum
        self.sums += other.sums
        self.delay += other.delay
        for name, fh in other.features.items():
            mine = self.features.get(name)
            if mine is None:
                self.features[name] = fh.copy()
            else:
                mine.add(fh)
        self.expired += other.expired
        self.implicit += other.implicit
        self.rank = rank_sum((self.rank, other.rank))
        self.flag_range = range_sum((self.flag_range, other.flag_range))
        for name, values in other.slices.items():
            mine_s = self.slices.setdefault(name, {})
            for value, conf in values.items():
                if value in mine_s:
                    mine_s[value] = mine_s[value] + conf
                else:
                    mine_s[value] = conf.copy()
        return self

    def __add__(self, other: BucketStats) -> BucketStats:
        return self.copy().add(other)

    def copy(self) -> BucketStats:
        return BucketStats(
            self.conf.copy(), self.hist.copy(), self.psum.copy(), self.sums.copy(),
            self.delay.copy(), {k: v.copy() for k, v in self.features.items()},
            self.expired, self.implicit,
            {k: {v: c.copy() for v, c in vals.items()} for k, vals in self.slices.items()},
            rank=self.rank,  # never written in place: shared
            flag_range=self.flag_range,
        )

    def is_empty(self) -> bool:
        return (
            not self.conf.any() and not self.hist.any() and not self.delay.any()
            and not self.features and self.expired == 0 and self.implicit == 0
            and not self.psum.any() and not self.sums.any() and not self.slices
            and (self.rank is None or not len(self.rank[0])) and self.flag_range == EMPTY
        )

    # --- per-prediction moves (used by the engine) ---------------------------------------------
    def add_prediction(self, state: int, flagged: bool, sbin: int, score: float, sign: int = 1) -> None:
        """Add (sign=+1) or remove (sign=-1) one prediction's score contribution in a label state."""
        if self._hist is None or self._psum is None:
            self._dense()  # before bins is reset: the lazy rows are built from it
        self.bins = None
        self.conf[state, int(flagged)] += sign
        self.hist[state, sbin] += sign
        self.psum[state, sbin] += sign * score
        p = min(max(score, LOG_EPS), 1.0 - LOG_EPS)
        s = self.sums[state]
        s[SUM_P2] += sign * score * score
        s[SUM_NLL_POS] += sign * -np.log(p)
        s[SUM_NLL_NEG] += sign * -np.log1p(-p)
        if state != UNL:
            key = np.array([state * N_RANK_BINS + int(rank_bin(np.array([score]))[0])], dtype=np.int32)
            self.rank = rank_sum((self.rank, (key, np.array([sign], dtype=np.int64))))

    # --- serialisation (sparse, compact) ------------------------------------------------------
    def score_bins(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(flat index int32, hist int64, psum float64) of the score bins where hist or psum is non-zero: `bins`
        when known, else one dense scan."""
        if self.bins is not None:
            return self.bins
        hist, psum = self.hist.ravel(), self.psum.ravel()
        # the same bins as hist | (psum != 0), through a bool mask: numpy finds non-zeros in bools far faster
        nz = np.flatnonzero((hist != 0) | (psum != 0) if hist.dtype.kind in "biu" else hist | (psum != 0))
        return nz.astype(np.int32), hist[nz].astype(np.int64), psum[nz].astype(np.float64)

    def to_bytes(self) -> bytes:
        """Sparse msgpack encoding: only non-zero fine bins are stored."""
        nz, hc, hp = self.score_bins()
        dnz = np.flatnonzero(self.delay)
        doc = {
            "v": 1,
            "conf": self.conf.ravel().tolist(),
            "hi": nz.tobytes(),
            "hc": hc.tobytes(),
            "hp": hp.tobytes(),
            "sums": self.sums.ravel().tolist(),
            "di": dnz.astype(np.int32).tobytes(),
            "dc": self.delay[dnz].astype(np.int64).tobytes(),
            "f": {k: _feature_doc(fh) for k, fh in self.features.items()},
            "exp": self.expired,
            "imp": self.implicit,
            "s": slices_doc(self.slices),
        }
        rank_into_doc(doc, self.rank)
        range_into_doc(doc, self.flag_range, self.predictions)
        return msgspec.msgpack.encode(doc)

    @classmethod
    def from_bytes(cls, data: bytes, features: bool | str = True, feature_data: bytes | None = None
                   ) -> BucketStats:
        """Decode; `features=False` skips feature histograms (metrics queries don't need them) and
        `features="packed"` leaves numeric counts as arrays for a fast `merge`. `feature_data`: the histograms
        stored apart (core.feature_blob), added to those the bucket's own bytes hold (none since 0013_featapart)."""
        doc = msgspec.msgpack.decode(data)
        b = cls()
        b.conf[:] = np.asarray(doc["conf"], dtype=np.int64).reshape(3, 2)
        idx = np.frombuffer(doc["hi"], dtype=np.int32)
        b.hist.ravel()[idx] = np.frombuffer(doc["hc"], dtype=np.int64)
        b.psum.ravel()[idx] = np.frombuffer(doc["hp"], dtype=np.float64)
        b.sums[:] = np.asarray(doc["sums"], dtype=np.float64).reshape(3, 3)
        b.delay[np.frombuffer(doc["di"], dtype=np.int32)] = np.frombuffer(doc["dc"], dtype=np.int64)
        b.features = features_from_doc(doc["f"], features)
        for k, fh in decode_features(feature_data, features).items():
            mine = b.features.get(k)
            if mine is None:
                b.features[k] = fh
            else:
                mine.add(fh)
        b.expired = int(doc["exp"])
        b.implicit = int(doc["imp"])
        for k, vals in doc.get("s", {}).items():
            b.slices[k] = {v: np.asarray(c, dtype=np.int64).reshape(3, 2) for v, c in vals.items()}
        b.rank = rank_from_doc(doc, labelled_in_conf(b.conf))
        b.flag_range = range_from_doc(doc, b.predictions)
        return b


def merge(buckets: Iterable[BucketStats]) -> BucketStats:
    """Sum of buckets (a window); the empty sum is an empty bucket.

    Feature histograms are summed per feature in one vectorised step (np.bincount over the fine bins) instead of
    dict by dict, so merging a week of hourly buckets stays fast however many values they hold.
    """
    total = BucketStats()
    parts: dict[str, list[FeatureHist]] = {}
    ranks: list[Rank | None] = []
    for b in buckets:
        feats, b.features = b.features, {}
        rank, b.rank = b.rank, empty_rank()
        try:
            total.add(b)
        finally:
            b.features, b.rank = feats, rank
        for name, fh in feats.items():
            parts.setdefault(name, []).append(fh)
        ranks.append(rank)
    for name, fhs in parts.items():
        total.features[name] = _merge_features(fhs)
    total.rank = rank_sum(ranks)  # one pass for the window (pair by pair would re-sum the growing total)
    return total


def _merge_features(fhs: list[FeatureHist]) -> FeatureHist:
    size = sum(len(fh.num) for fh in fhs)
    out = FeatureHist(missing=sum(fh.missing for fh in fhs))
    keys_parts = [fh.packed[0] for fh in fhs if fh.packed is not None]
    vals_parts = [fh.packed[1] for fh in fhs if fh.packed is not None]
    if size:
        keys_parts.append(np.fromiter(chain.from_iterable(fh.num.keys() for fh in fhs), dtype=np.int64, count=size))
        vals_parts.append(np.fromiter(chain.from_iterable(fh.num.values() for fh in fhs), dtype=np.int64,
                                      count=size))
    if keys_parts:
        keys = np.concatenate([k.astype(np.int64) for k in keys_parts])
        vals = np.concatenate(vals_parts)
        dense = np.bincount(keys, weights=vals).astype(np.int64)
        nz = np.flatnonzero(dense)
        out.num = dict(zip(nz.tolist(), dense[nz].tolist()))
    cat: Counter[str] = Counter()
    for fh in fhs:
        cat.update(fh.cat)
    out.cat = dict(cat)
    return out
