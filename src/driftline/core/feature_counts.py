"""One feature's histogram in a bucket (FeatureHist) and its compact encoding inside a stored bucket (packed
fine-bin arrays): the feature half of core.stats' BucketStats."""

from __future__ import annotations

import struct
from array import array
from collections.abc import Collection

import numpy as np

_NATIVE = array("i").itemsize == 4 and array("q").itemsize == 8
"""array.array's 'i'/'q' are numpy's int32/int64 here (the fast packing routes need it)."""


class FeatureHist:
    """Distribution of one feature in a bucket: fine numeric bins, category counts, missing count.

    `num` may be left unbuilt: the batch path (core/feature_hists) gives only `num_bytes`, and the dict is made
    from them on first read of `num` (a new bucket is encoded from the bytes alone, never needing it)."""

    __slots__ = ("_num", "cat", "missing", "packed", "_num_bytes")

    def __init__(self, num: dict[int, int] | None = None, cat: dict[str, int] | None = None, missing: int = 0,
                 packed: tuple[np.ndarray, np.ndarray] | None = None, num_bytes: tuple[bytes, bytes] | None = None
                 ) -> None:
        """`num=None` with `num_bytes` given: the numeric counts are those bytes, their dict built when read."""
        self._num = {} if num is None and num_bytes is None else num
        self.cat = {} if cat is None else cat
        self.missing = missing
        self.packed = packed
        """Numeric counts still as packed (fine-bin index, count) arrays: only from `from_bytes(features="packed")`,
        consumed by `merge`, which sums them without building dicts."""
        self._num_bytes = num_bytes

    @property
    def num(self) -> dict[int, int]:
        """Fine-bin counts (bin → count), in bin order when built from `num_bytes`."""
        num = self._num
        if num is None:
            idx, cnt = self._num_bytes  # type: ignore[misc]
            num = self._num = dict(zip(np.frombuffer(idx, dtype=np.int32).tolist(),
                                       np.frombuffer(cnt, dtype=np.int64).tolist()))
        return num

    @num.setter
    def num(self, value: dict[int, int]) -> None:
        self._num = value

    @property
    def num_bytes(self) -> tuple[bytes, bytes] | None:
        """`num` as _feature_doc packs it (int32 bins, int64 counts, in num's order), known by whoever built num
        from arrays (core/feature_hists) so encoding skips repacking; None when unknown. add and unpack reset it:
        whatever else changes num must reset it too (the dict is built first when it was left unbuilt)."""
        return self._num_bytes

    @num_bytes.setter
    def num_bytes(self, value: tuple[bytes, bytes] | None) -> None:
        if self._num is None:
            self.num  # noqa: B018 - built from the bytes before they go
        self._num_bytes = value

    def replace_bins(self, num_bytes: tuple[bytes, bytes]) -> None:
        """`num` becomes the counts packed in `num_bytes` (int32 bins, int64 counts), its dict built when read."""
        self._num, self._num_bytes = None, num_bytes

    def __eq__(self, other: object) -> bool:
        """As a dataclass compares: num, cat, missing and packed (num_bytes is not part of equality)."""
        if other.__class__ is not self.__class__:
            return NotImplemented
        o: FeatureHist = other  # type: ignore[assignment]
        return (self.num, self.cat, self.missing, self.packed) == (o.num, o.cat, o.missing, o.packed)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"FeatureHist(num={self.num!r}, cat={self.cat!r}, missing={self.missing!r}, packed={self.packed!r})"

    def add(self, other: FeatureHist) -> None:
        """Add another histogram into this one in place."""
        self.num_bytes = None
        self.unpack()
        other.unpack()
        num = self.num
        for k, v in other.num.items():
            num[k] = num.get(k, 0) + v
        for c, v in other.cat.items():
            self.cat[c] = self.cat.get(c, 0) + v
        self.missing += other.missing

    def unpack(self) -> None:
        """Turn packed numeric arrays into the `num` dict (no-op when not packed)."""
        if self.packed is not None:
            self.num_bytes = None
            num = self.num
            idx, cnt = self.packed
            for k, v in zip(idx.tolist(), cnt.tolist()):
                num[k] = num.get(k, 0) + v
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
