"""Feature samples as columns, from a batch's feature dicts to their stored bytes (the ingestion path).

A bucket's sample is encoded, or merged into its stored bytes, from a column per feature name, without a dict per
row, whenever the result is provably encode_sample's of the row route in sample.py: its hashes distinct, at most
k and none above the threshold, so that the row route keeps every row as it is (sample_sorted). Otherwise the
rows are built and the row route decides. Pure: no IO.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import compress
from operator import lt

import msgspec

from .sample import FeatureSample, Value, decode_sample, encode_sample, merge_samples, stored_columns


@dataclass(frozen=True, slots=True)
class SampleColumns:
    """A FeatureSample kept as columns: hashes sorted and distinct, at most k, none above tau; names sorted, each
    one's column holding a value in some row; cols[i][j] is row j's value of names[i], None where it has none."""

    tau: int
    hashes: list[int]
    names: list[str]
    cols: list[list[Value | None]]

    def encode(self) -> bytes:
        """encode_sample's bytes of the sample (the same msgpack document: lists encode as its tuples do)."""
        return msgspec.msgpack.encode({"tau": self.tau, "h": self.hashes, "f": self.names, "v": self.cols})

    def to_sample(self) -> FeatureSample:
        """The sample as rows (each row's names in sorted order, as decode_sample builds them)."""
        if not self.names:
            return FeatureSample(self.tau, tuple(self.hashes), tuple({} for _ in self.hashes))
        return FeatureSample(self.tau, tuple(self.hashes), tuple(
            {n: v for n, v in zip(self.names, vals) if v is not None} for vals in zip(*self.cols)))


def distinct_within(hashes: Sequence[int], k: int, tau: int) -> bool:
    """Whether sample_sorted keeps these sorted hashes' rows as they are: 1 to k hashes, strictly increasing,
    none above tau."""
    return 1 <= len(hashes) <= k and hashes[-1] <= tau and all(map(lt, hashes, hashes[1:]))


@dataclass(frozen=True, slots=True)
class BatchColumns:
    """A batch's sampled columns (sampled_columns) with the names sorted, and whether each column may hold a None
    (False: it holds none), both found once per batch; cut(…) gives a bucket's sample of some of its rows."""

    names: list[str]
    cols: list[list[Value | None]]
    gaps: list[bool]

    @staticmethod
    def of(names: Sequence[str], cols: Sequence[list[Value | None]], gaps: Sequence[bool] | None = None
           ) -> BatchColumns:
        """The columns in order of their (distinct) names; `gaps`: whether each may hold a None (sampled_column's
        flags; None: each column is looked through)."""
        order = sorted(range(len(names)), key=names.__getitem__)
        ordered = [cols[i] for i in order]
        found = [None in col for col in ordered] if gaps is None else [gaps[i] for i in order]
        return BatchColumns([names[i] for i in order], ordered, found)

    def cut(self, tau: int, hashes: list[int], lo: int, hi: int) -> SampleColumns:
        """The sample of rows lo..hi, given their hashes (distinct, sorted: distinct_within): the names holding a
        value in those rows, sorted, and their columns cut to them (a column without a None anywhere holds one)."""
        parts = [col[lo:hi] for col in self.cols]
        n = hi - lo
        if any(self.gaps) and any(part.count(None) == n for part in compress(parts, self.gaps)):
            kept = [not (gaps and part.count(None) == n) for gaps, part in zip(self.gaps, parts)]
            return SampleColumns(tau, hashes, list(compress(self.names, kept)), list(compress(parts, kept)))
        return SampleColumns(tau, hashes, list(self.names), parts)


def encoded(delta: FeatureSample | SampleColumns) -> bytes:
    """The stored bytes of a new bucket's sample (encode_sample's)."""
    return delta.encode() if isinstance(delta, SampleColumns) else encode_sample(delta)


def merged_encoded(old: bytes, delta: FeatureSample | SampleColumns, k: int) -> bytes:
    """encode_sample(merge_samples((decode_sample(old), delta), k)): from columns when the merged hashes are
    distinct, at most k and none above the smaller threshold (and the stored names distinct), else by rows."""
    if isinstance(delta, SampleColumns):
        data = _merged_columns(old, delta, k)
        if data is not None:
            return data
        delta = delta.to_sample()
    return encode_sample(merge_samples((decode_sample(old), delta), k))


def _merged_columns(old: bytes, delta: SampleColumns, k: int) -> bytes | None:
    """The merged bytes built from the stored columns and the delta's, or None when the row route is needed. The
    rows are ordered by hash with one stable sort of positions (as merge_samples orders them); a stored name
    without a value is dropped (decode_sample's rows lack it)."""
    s = stored_columns(old)
    n_old, n_new = len(s.h), len(delta.hashes)
    hashes = s.h + delta.hashes
    tau = min(s.tau, delta.tau)
    if len(hashes) > k or len(set(s.f)) != len(s.f):
        return None
    order = sorted(range(len(hashes)), key=hashes.__getitem__)
    merged = list(map(hashes.__getitem__, order))
    if not distinct_within(merged, k, tau):
        return None
    stored = {name: col for name, col in zip(s.f, s.v) if col.count(None) < n_old}
    new = dict(zip(delta.names, delta.cols))
    names = sorted(stored.keys() | new.keys())
    pad_old: list[Value | None] = [None] * n_old
    pad_new: list[Value | None] = [None] * n_new
    cols = [list(map((stored.get(n, pad_old) + new.get(n, pad_new)).__getitem__, order)) for n in names]
    return msgspec.msgpack.encode({"tau": tau, "h": merged, "f": names, "v": cols})
