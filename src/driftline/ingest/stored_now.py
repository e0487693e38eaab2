"""The join-row keys one run (a replay) stored as new predictions, so its maintenance can tell which of the
predictions it expires that run stored itself (replay's expiry warning) from older ones expiring as time moves on."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..core.engine import PredKey

MAX_KEYS = 5_000_000
"""Keys a log holds at most (40 MB): past it, later keys are not logged and the warning counts among the first
MAX_KEYS only (says so): a replay of any length stays within the memory bound."""


class KeyLog:
    """Hashes of the keys stored (8 bytes a prediction, at most `limit` of them); a 64-bit hash collision with an
    older key could only miscount the warning, never a stored count."""

    def __init__(self, limit: int = MAX_KEYS) -> None:
        self.limit = limit
        self.size = 0
        self.full = False
        """Whether keys were left out for the bound (the count it gives is then a lower bound)."""
        self._parts: list[np.ndarray] = []
        self._sorted: np.ndarray | None = None

    def add(self, keys: Iterable[PredKey]) -> None:
        """Record keys newly stored (after their transaction committed), up to the bound."""
        if self.full:
            return
        part = np.fromiter(map(hash, keys), dtype=np.int64)
        if len(part) > self.limit - self.size:
            part, self.full = part[:self.limit - self.size], True
        if len(part):
            self._parts.append(part)
            self.size += len(part)
            self._sorted = None

    def contains(self, key: PredKey) -> bool:
        """Whether this run stored the key (among the keys logged)."""
        if self._sorted is None:
            self._sorted = self._merged()
            self._parts = [self._sorted]
        h = hash(key)
        i = int(np.searchsorted(self._sorted, h))
        return i < len(self._sorted) and int(self._sorted[i]) == h

    def _merged(self) -> np.ndarray:
        """Every logged hash in one sorted array, built in place: each part is dropped once copied and the array is
        sorted where it lies, duplicates kept (searchsorted finds them alike). np.unique(np.concatenate(...)) held
        the parts, their concatenation, unique's copy of it, a mask and the result at once: with the 2.6 M keys of a
        4.9 M-event replay the first lookup took a process from 55 to 213 MB peak RSS (now 74 MB)."""
        merged = np.empty(sum(len(p) for p in self._parts), dtype=np.int64)
        parts, self._parts = self._parts, []
        parts.reverse()
        at = 0
        while parts:
            part = parts.pop()
            merged[at:at + len(part)] = part
            at += len(part)
            del part
        merged.sort()
        return merged
