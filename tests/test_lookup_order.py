"""bulk.load_join's SQLite path sorts a batch's distinct ids from their order of first sight, not from a set's hash
order (issue 18): a batch's ids come in ascending runs, which the sort merges in about half the comparisons; the
sorted list, and so every lookup statement, is the same."""

from __future__ import annotations

from typing import Any

import pytest

from driftline.core.engine import JoinView, OutcomeRecord
from driftline.storage import bulk, sqlite_lookup, sqlite_rows


def _batch_ids() -> list[str]:
    """Ids as a replay batch has them: new predictions counting up, outcomes of older ones in their order, repeats."""
    ids = []
    for i in range(4000):
        ids.append(f"tx-{20000 + i}")
        if i % 2:
            ids.append(f"tx-{10000 + i}")
        if i % 7 == 0:
            ids.append(f"tx-{20000 + i // 2}")
    return ids


def test_ids_are_sorted_from_first_sight_in_few_comparisons(monkeypatch: pytest.MonkeyPatch) -> None:
    compared = [0]

    class Counted(str):
        """An id counting the comparisons the sort makes."""

        __slots__ = ()

        def __lt__(self, other: object) -> bool:
            compared[0] += 1
            return str.__lt__(self, other)  # type: ignore[operator]

    got: list[list[str]] = []
    monkeypatch.setattr(sqlite_lookup, "lookup", lambda conn, idl, view: got.append(list(idl)))
    ids = _batch_ids()
    view = bulk.load_join(None, "sqlite", map(Counted, ids))  # type: ignore[arg-type]
    assert isinstance(view, JoinView)
    distinct = sorted(set(ids))
    assert got == [distinct]
    # from a set's hash order timsort needs ~11 comparisons an id here, from first sight under 5
    assert compared[0] < 6 * len(distinct)


def test_no_ids_no_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    called: list[Any] = []
    real = sqlite_lookup.lookup
    monkeypatch.setattr(sqlite_lookup, "lookup", lambda *a: (called.append(a), real(*a)))
    view = bulk.load_join(None, "sqlite", iter(()))  # type: ignore[arg-type]  # no connection is touched
    assert not view.preds and not view.outcomes and called == [(None, [], view)]


def test_outcome_rows_sorted_by_their_id_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """write_outcomes puts a batch's outcome rows (one per id) in key order comparing the ids only: timsort's tuple
    comparison tested each pair of ids for equality first (issue 18: ~2.7x the instructions on a batch's outcomes of
    stored predictions, which come in thousands of runs). The rows and their order are those of the tuple sort."""
    equal = [0]

    class Counted(str):
        """An id counting the equality tests made on it."""

        __slots__ = ()

        def __eq__(self, other: object) -> bool:
            equal[0] += 1
            return str.__eq__(self, other)

        __hash__ = str.__hash__

    ids = _batch_ids()
    outcomes = [OutcomeRecord(Counted(p), i % 2, 1.7e9 + i, i % 3, i % 5 > 0)
                for i, p in enumerate(dict.fromkeys(reversed(ids)))]
    got: list[list[Any]] = []
    monkeypatch.setattr(sqlite_rows, "insert_many",
                        lambda conn, head, width, tail, flat, *_: got.append(flat) if flat else None)
    bulk.write_outcomes(None, "sqlite", outcomes)  # type: ignore[arg-type]
    expected = sorted((str(o.prediction_id), o.label, o.ts, o.shard, int(o.matched)) for o in outcomes)
    assert equal[0] == 0
    assert [tuple(got[0][i:i + 5]) for i in range(0, len(got[0]), 5)] == expected
