"""Category counts by uint16 cells (feature_hists._small_cells, a radix sort) equal the previous np.unique route:
the same buckets, counts, category names and the order of every dict's items (the encoded buckets follow it), on
random columns and whole batches (mixed types, nulls, booleans beside ints, NaN, long strings, more categories than
a bucket keeps, buckets past the cells' room)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import count
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import driftline.core.feature_hists as fh
from driftline.core.feature_hists import _BOOL_NAMES, _category_groups, _small_cells, feature_hists
from driftline.core.list_arrays import i64


def frozen_category_groups(bidx: np.ndarray, vals: Sequence[Any], labels: dict[Any, str] | None
                           ) -> tuple[list[int], list[dict[str, int]]] | None:
    """_category_groups as it was before the uint16 cells (commit e27867f)."""
    n = len(vals)
    seen: dict[Any, int] = {}
    code = i64(list(map(seen.setdefault, vals, count())))
    if labels is None and max(map(len, seen)) > fh.MAX_CATEGORY_LEN:
        return None
    keys = bidx * n + code
    uniq, first, cnt = np.unique(keys, return_index=True, return_counts=True)
    b_of = uniq // n
    order = np.lexsort((first, b_of))
    uniq, b_of = uniq[order], b_of[order]
    at = (uniq - b_of * n).tolist()
    names = list(map(vals.__getitem__, at)) if labels is None else [labels[vals[i]] for i in at]
    bl, cuts = fh._groups(b_of)
    cats = fh._dicts(names, cnt[order].tolist(), cuts)
    for i in [i for i, c in enumerate(cats) if len(c) > fh.MAX_CATEGORIES_PER_BUCKET]:
        cats[i] = fh.bound_categories(Counter(cats[i]))
    return bl, cats


def _items(groups: tuple[list[int], list[dict[str, int]]] | None) -> Any:
    return None if groups is None else (groups[0], [list(c.items()) for c in groups[1]])


STRINGS = st.one_of(st.sampled_from(["FR", "DE", "IT", "", "x" * 200, "y" * 201]), st.text(max_size=3))
BUCKETS = st.one_of(st.integers(0, 7), st.integers(0, 40_000))  # past 32,768 buckets two values leave the cells


@given(st.data())
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_category_groups_equal_the_frozen_route(data: Any) -> None:
    n = data.draw(st.integers(1, 60))
    bidx = np.asarray(data.draw(st.lists(BUCKETS, min_size=n, max_size=n)), dtype=np.int64)
    if data.draw(st.booleans()):
        vals: list[Any] = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
        labels: dict[Any, str] | None = _BOOL_NAMES
    else:
        vals = [s.encode().decode() for s in data.draw(st.lists(STRINGS, min_size=n, max_size=n))]  # fresh objects
        labels = None
    assert _items(_category_groups(bidx, vals, labels)) == _items(frozen_category_groups(bidx, vals, labels))


def test_many_categories_are_bounded_the_same_way() -> None:
    rng = np.random.default_rng(3)
    n = 12_000
    bidx = np.sort(rng.integers(0, 3, n)).astype(np.int64)
    vals = [f"c{v}" for v in rng.integers(0, 1_500, n)]
    new, old = _category_groups(bidx, vals, None), frozen_category_groups(bidx, vals, None)
    assert max(map(len, new[1])) == fh.MAX_CATEGORIES_PER_BUCKET  # type: ignore[index]
    assert _items(new) == _items(old)


VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=True), STRINGS)


class _Features:
    """What feature_hists reads and writes of a bucket's statistics (its `features`): 33,000 BucketStats took ~3 GB
    and 1.9 s per example (dense score rows), ~10 minutes of this test under a parallel run's memory pressure."""

    __slots__ = ("features",)

    def __init__(self) -> None:
        self.features: dict[str, Any] = {}


@given(st.data())
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_feature_hists_equal_the_frozen_route(data: Any) -> None:
    n = data.draw(st.integers(1, 50))
    nb = data.draw(st.sampled_from([1, 4, 4, 4, 33_000]))
    buckets = data.draw(st.lists(st.integers(0, nb - 1), min_size=n, max_size=n))
    col = {"a": st.sampled_from(["FR", "DE"]), "b": st.booleans(), "c": VALUES, "d": STRINGS}
    dicts = [{k: data.draw(v) for k, v in col.items() if data.draw(st.integers(0, 9))} for _ in range(n)]
    declared = data.draw(st.sampled_from([(), ("a", "b", "c", "d")]))
    runs = []
    for groups in (_category_groups, frozen_category_groups):
        fh._category_groups = groups  # type: ignore[assignment]  # a hypothesis test takes no monkeypatch
        try:
            out = [_Features() for _ in range(nb)]  # type: ignore[misc]
            counters: Counter[tuple[str, str]] = Counter()
            feature_hists(buckets, dicts, declared, 50, out, counters)
        finally:
            fh._category_groups = _category_groups  # type: ignore[assignment]
        runs.append(([{k: (v.num, list(v.cat.items()), v.missing) for k, v in s.features.items()} for s in out
                      if s.features], counters))
    assert runs[0] == runs[1]


def test_small_columns_are_counted_without_a_comparison_sort(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    inner = np.unique
    monkeypatch.setattr(np, "unique", lambda *a, **k: calls.append(1) or inner(*a, **k))
    rng = np.random.default_rng(5)
    bidx = rng.integers(0, 500, 3_000).astype(np.int64)
    countries = [("FR", "DE", "IT")[i] for i in rng.integers(0, 3, 3_000)]
    flags = [bool(i) for i in rng.integers(0, 2, 3_000)]
    assert _items(_category_groups(bidx, countries, None)) == _items(frozen_category_groups(bidx, countries, None))
    assert _items(_category_groups(bidx, flags, _BOOL_NAMES)) == _items(frozen_category_groups(bidx, flags,
                                                                                                _BOOL_NAMES))
    assert len(calls) == 2  # the frozen route's two, none for the cells
    b_of, vi, cnt = _small_cells(np.array([1, 0, 1, 1], dtype=np.int64), np.array([1, 0, 0, 1]), 2)
    assert (b_of.tolist(), vi.tolist(), cnt.tolist()) == ([0, 1, 1], [0, 1, 0], [1, 2, 1])
