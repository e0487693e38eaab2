"""The split of a batch's join rows into new (copied) and stored (upserted) ones on PostgreSQL (pgcopy.split_stored):
the same two lists, in the same order, as the per-row comprehensions it replaces (issue 18), whatever the overlap."""

from __future__ import annotations

from operator import itemgetter

from hypothesis import given
from hypothesis import strategies as st

from driftline.storage import bulk
from driftline.storage.pgcopy import split_stored

_ids = st.sampled_from(["a", "b", "c", "tx-1", "tx-10", "tx-2", "\u00e9"])
_rows = st.lists(st.tuples(_ids, st.sampled_from(["fraud", "m"]), st.sampled_from(["A", "B"]), st.floats()),
                 unique_by=lambda r: r[:3])


@given(rows=_rows, stored=st.frozensets(st.tuples(_ids, st.sampled_from(["fraud", "m"]), st.sampled_from(["A", "B"]))))
def test_prediction_rows_split_as_the_comprehensions(rows, stored) -> None:
    rows = sorted(rows)
    fresh, held = split_stored(rows, bulk._PRED_KEY, stored)
    assert fresh == [r for r in rows if r[:3] not in stored]
    assert held == [r for r in rows if r[:3] in stored]


@given(rows=st.lists(st.tuples(_ids, st.integers(0, 1)), unique_by=itemgetter(0)), stored=st.frozensets(_ids))
def test_outcome_rows_split_as_the_comprehensions(rows, stored) -> None:
    fresh, held = split_stored(rows, bulk._OUT_KEY, stored)
    assert fresh == [r for r in rows if r[0] not in stored]
    assert held == [r for r in rows if r[0] in stored]
