"""One feature's histogram in a bucket (FeatureHist) and its compact encoding inside a stored bucket (packed
fine-bin arrays): the feature half of core.stats' BucketStats."""

from __future__ import annotations

import struct
from array import array
from collections.abc import Collection
from dataclasses import dataclass, field

import numpy as np

_NATIVE = array("i").itemsize == 4 and array("q").itemsize == 8
"""array.array's 'i'/'q' are numpy's int32/int64 here (the fast packing routes need it)."""


@dataclass(slots=True)
class FeatureHist:
    """Distribution of one feature in a bucket: fine numeric bins, category counts, missing count."""

    num: dict[int, int] = field(default_factory=dict)
    cat: dict[str, int] = field(default_factory=dict)
    missing: int = 0
    packed: tuple[np.ndarray, np.ndarray] | None = None
    """Numeric counts still as packed (fine-bin index, count) arrays: only from `from_bytes(features="packed")`,
    consumed by `merge`, which sums them without building dicts."""
    num_bytes: tuple[bytes, bytes] | None = field(default=None, compare=False, repr=False)
    """`num` as _feature_doc packs it (int32 bins, int64 counts, in num's order), known by whoever built num from
    arrays (core/feature_hists) so encoding skips repacking; None when unknown. add and unpack reset it: whatever
    else changes num must reset it too."""

    def add(self, other: FeatureHist) -> None:
        """Add another histogram into this one in place."""
        self.num_bytes = None
        self.unpack()
        other.unpack()
        for k, v in other.num.items():
            self.num[k] = self.num.get(k, 0) + v
        for c, v in other.cat.items():
            self.cat[c] = self.cat.get(c, 0) + v
        self.missing += other.missing

    def unpack(self) -> None:
        """Turn packed numeric arrays into the `num` dict (no-op when not packed)."""
        if self.packed is not None:
            self.num_bytes = None
            idx, cnt = self.packed
            for k, v in zip(idx.tolist(), cnt.tolist()):
                self.num[k] = self.num.get(k, 0) + v
            self.packed = None

    @property
    def total(self) -> int:
        self.unpack()
        return sum(self.num.values()) + sum(self.cat.values()) + self.missing

    def copy(self) -> FeatureHist:
        self.unpack()
        return FeatureHist(dict(self.num), dict(self.cat), self.missing)


def _packed(code: str, values: Collection[int]) -> bytes:
    """array(code, values).tobytes() in one struct.pack call (array's constructor appends a non-list iterable item
    by item, several times slower): the same native bytes, and struct.error wherever array raises TypeError or
    OverflowError (a value that is not an integer, or out of range)."""
    return struct.pack(f"{len(values)}{code}", *values)


def _feature_doc(fh: FeatureHist) -> list[object]:
    """Compact encoding of a feature histogram: fine-bin indices and counts as packed arrays (struct makes numpy's
    native bytes without its per-call cost; numpy itself for a key or count that is not a plain int). A feature
    without numeric values (a categorical one) packs to two empty byte strings, given as such. Counts still packed
    (from_bytes(features="packed")) are unpacked first, so none is left out; bins packed when num was built
    (num_bytes) are taken as they are."""
    fh.unpack()
    if fh.num_bytes is not None:
        return [list(fh.num_bytes), list(fh.cat.items()), fh.missing]
    if not fh.num:
        return [[b"", b""], list(fh.cat.items()), fh.missing]
    try:
        packed = [_packed("i", fh.num), _packed("q", fh.num.values())] if _NATIVE else None
    except struct.error:
        packed = None
    if packed is None:
        idx = np.fromiter(fh.num.keys(), dtype=np.int32, count=len(fh.num))
        cnt = np.fromiter(fh.num.values(), dtype=np.int64, count=len(fh.num))
        packed = [idx.tobytes(), cnt.tobytes()]
    return [packed, list(fh.cat.items()), fh.missing]


def _num_dict(num: object) -> dict[int, int]:
    """Fine-bin counts from the packed arrays (or the older list of pairs)."""
    if isinstance(num, list) and len(num) == 2 and isinstance(num[0], bytes):
        return dict(zip(np.frombuffer(num[0], dtype=np.int32).tolist(),
                        np.frombuffer(num[1], dtype=np.int64).tolist()))
    return {int(i): int(c) for i, c in num}  # type: ignore[union-attr]
