"""The bound on a stored bucket's slice values: at most MAX_SLICE_VALUES values of each slice feature, the rest
summed under OTHER (toxicity tryout: 5,000 distinct values in one hour made a 2.9 MB database, and nothing bounded
them, unlike feature histograms' categories).

Which values keep their own counts must not depend on arrival order, batch split or the number of writers, and a
prediction's later label moves must land where its first count did. Both hold by keeping, of all the values a
bucket has seen, the MAX_SLICE_VALUES with the smallest 64-bit hashes (a bottom-k set): the set depends only on
the values seen, and a value folded into OTHER once can never come back (the k-th smallest hash only falls as more
values arrive), so its later moves go to OTHER too, where its counts are. Merging buckets (compaction) keeps the
bottom k of the union, which folds no value that a part kept apart from those the union drops."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

OTHER = "__other__"
"""The value that holds the folded values' counts (the name feature histograms fold their rarest categories into;
not imported from feature_hists, which imports core.stats, which uses this module)."""

MAX_SLICE_VALUES = 1000
"""Values of one slice feature kept apart in one stored bucket (an hour, or a compacted day); OTHER holds the rest."""

V = TypeVar("V")


def value_hash(value: str) -> int:
    """A slice value's 64-bit rank key: blake2b of its UTF-8 text (the same in every process, unlike hash())."""
    return int.from_bytes(hashlib.blake2b(value.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big")


def bounded(table: dict[str, V], add: Callable[[V, V], V], limit: int | None = None) -> dict[str, V]:
    """`table` (value -> counts) with at most `limit` (default MAX_SLICE_VALUES) values besides OTHER: those with
    the smallest value_hash kept, every other value's counts summed (`add`) into OTHER. The table itself when it is
    within the limit."""
    limit = MAX_SLICE_VALUES if limit is None else limit
    if len(table) - (OTHER in table) <= limit:
        return table
    ranked = sorted((v for v in table if v != OTHER), key=lambda v: (value_hash(v), v))
    kept = {v: table[v] for v in ranked[:limit]}
    other = table.get(OTHER)
    for v in ranked[limit:]:
        other = table[v] if other is None else add(other, table[v])
    if other is not None:
        kept[OTHER] = other
    return kept


def bounded_slices(slices: Mapping[str, dict[str, V]], add: Callable[[V, V], V],
                   limit: int | None = None) -> dict[str, dict[str, V]]:
    """Every slice feature's table bounded (`bounded`)."""
    return {name: bounded(values, add, limit) for name, values in slices.items()}


def add_lists(a: Any, b: Any) -> list[int]:
    """Two stored conf lists (or arrays) summed element-wise, as a list of ints (the stored form)."""
    return [int(x) + int(y) for x, y in zip(a, b)]


def slices_doc(slices: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, list[int]]]:
    """A bucket's slices as stored ("s": feature -> value -> its 6 conf counts as a list), bounded."""
    return bounded_slices({k: {v: c.ravel().tolist() for v, c in vals.items()} for k, vals in slices.items()},
                          add_lists)
