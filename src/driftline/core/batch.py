"""The batch path of the engine: the common events of a batch applied as columns, the rare ones event by event.

A prediction id is *plain* in a batch when nothing is stored for it (no join row, no outcome) and the batch holds
either its one prediction alone or its one prediction followed by its one outcome. An id is a *stored join* when
the batch holds only its one outcome, no outcome is stored for it and exactly one unlabelled, not implicitly
negative prediction is. Neither kind can interact with any other event, so their effects (new join rows, outcomes,
label moves, label delays, feature dicts) are computed for all of them at once (core/batch_columns.py). Every other
event (duplicates, shadow variants, early outcomes, corrections, stale outcomes, relabels) goes through the
per-event engine, in arrival order. Each move carries the sequence number of its event, and `Moves.deltas` merges
both in that order, so every bucket sum adds the same terms in the same order as the per-event engine: results are
identical bit for bit (tests/test_batch_engine.py checks it on dirty streams, any arrival order and batch split).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import count, repeat
from typing import Any

import numpy as np

from .batch_columns import SEQ, apply_plain, apply_stored
from .engine import Engine, PredRecord
from .events import Decoded, Prediction
from .list_arrays import i64


def apply_batch(engine: Engine, ok: Sequence[tuple[Decoded, int]], columns: EventColumns | None = None) -> None:
    """Apply a batch of accepted (event, shard) pairs to the engine: plain ids and stored joins as columns, the
    rest per event. `columns`: the events of `ok` and their prediction ids, when the caller listed them already."""
    evs, pids, is_pred = columns if columns is not None else event_columns(ok)
    lone, head, tail, stored, stored_recs = _group_arrays(engine, pids, is_pred)
    moves = engine._moves
    moves.batch = (evs, pids, is_pred)
    if len(lone) + len(head) + len(tail) + len(stored) < len(ok):  # the four groups are disjoint
        rest = np.ones(len(ok), dtype=bool)
        rest[np.concatenate((lone, head, tail, stored))] = False
        apply = engine.apply
        for i in np.flatnonzero(rest).tolist():
            moves.at = i * SEQ
            d, shard = ok[i]
            apply(d, shard)
    moves.at = 0
    if len(lone) or len(head):
        apply_plain(engine, ok, evs, lone, head, tail)
    if len(stored):
        apply_stored(engine, ok, evs, stored, stored_recs)


EventColumns = tuple[list[Any], list[str], list[bool]]
"""The events of a batch's (event, shard) pairs, their prediction ids and whether each is a prediction, in order
(`event_columns`)."""


def event_columns(ok: Sequence[tuple[Decoded, int]]) -> EventColumns:
    """The events of `ok`, their prediction ids and their prediction flags: listed once per batch, by whichever stage
    needs them first (the label gate and the engine both read the flags: one pass over the types, not two)."""
    evs = [d.event for d, _ in ok]
    return evs, [e.prediction_id for e in evs], pred_flags(evs)


def _plain(engine: Engine, ok: Sequence[tuple[Decoded, int]]) -> tuple[list[int], list[int], list[int]]:
    """(indices of plain lone predictions, of plain predictions with their outcome later in the batch, of those
    outcomes), the last two aligned; every other event is left to the per-event engine or the stored-join path."""
    evs = [d.event for d, _ in ok]
    lone, head, tail, _ = _groups(engine, [e.prediction_id for e in evs], pred_flags(evs))
    return lone, head, tail


def pred_flags(evs: list[Any]) -> list[bool]:
    """Whether each event is a prediction (`isinstance`, decided once per type: it is slow on msgspec Structs)."""
    preds = frozenset(t for t in set(map(type, evs)) if issubclass(t, Prediction))
    return [type(e) in preds for e in evs]


def _groups(engine: Engine, pids: list[str], is_pred: list[bool]
            ) -> tuple[list[int], list[int], list[int], list[int]]:
    """(plain lone predictions, plain predictions with their outcome, those outcomes, outcomes of stored joins):
    event indices, each list ascending (the last of the plain ones aligned with the second)."""
    lone, head, tail, stored, _ = _group_arrays(engine, pids, is_pred)
    return lone.tolist(), head.tolist(), tail.tolist(), stored.tolist()


def _group_arrays(engine: Engine, pids: list[str], is_pred: list[bool]
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[PredRecord]]:
    """_groups as int64 arrays (the column stages number their moves from them), and the stored prediction of each
    stored join (aligned with them: apply_stored needs not look it up again). Each id is looked up once; the stored
    state is visited by its own (few) ids, once each, and every other test is one numpy step per batch."""
    n = len(pids)
    firsts: dict[str, int] = {}  # each id looked up once: the position of its first event
    first = i64(list(map(firsts.setdefault, pids, count())))
    per = np.bincount(first, minlength=n)  # at each id's first position: how many events carry it
    pred = np.frombuffer(bytes(is_pred), dtype=bool)  # bools are bytes 0 and 1: read in one C pass
    view = engine.view
    stored_p, stored_o = view.preds, view.outcomes
    free = per == 1  # at each id's first position: carried once and nothing stored for it
    known = np.zeros(n + 1, dtype=bool)  # at each id's first position: something stored for it (n: not in the batch)
    if stored_p or stored_o:
        at_p = _positions_of(firsts, stored_p, n)
        at_o = _positions_of(firsts, stored_o, n)
        known[at_p] = True
        known[at_o] = True
        free &= ~known[:n]
    lone = np.flatnonzero(free & pred)
    head = tail = stored = np.zeros(0, dtype=np.int64)
    again = np.flatnonzero(first != np.arange(n))  # the events whose id came before
    if len(again):
        owner = first[again]
        # the second event of an id carried twice, an outcome after its prediction, nothing stored for the id
        pair = (per[owner] == 2) & pred[owner] & ~pred[again] & ~known[owner]
        owner, again = owner[pair], again[pair]
        order = np.argsort(owner, kind="stable")
        head, tail = owner[order], again[order]
    recs: list[PredRecord] = []
    if stored_p:
        lists = list(stored_p.values())
        # one unlabelled, not implicit prediction stored (and no outcome: below); each list read once
        one = [len(rs) == 1 and rs[0].label is None and not rs[0].implicit for rs in lists]
        cand = np.frombuffer(bytes(one), dtype=bool) & (at_p < n)
        if stored_o:
            has_o = np.zeros(n + 1, dtype=bool)
            has_o[at_o] = True
            cand &= ~has_o[at_p]
        idx = np.flatnonzero(cand)
        at = at_p[idx]
        keep = (per[at] == 1) & ~pred[at]
        idx, at = idx[keep], at[keep]
        order = np.argsort(at, kind="stable")
        stored = at[order]
        recs = [lists[i][0] for i in idx[order].tolist()]
    return lone, head, tail, stored, recs


def _positions_of(firsts: dict[str, int], ids: Iterable[str], n: int) -> np.ndarray:
    """The batch position of each id, `n` for an id the batch does not hold (none: a view loads the batch's ids)."""
    return i64(list(map(firsts.get, ids, repeat(n))))


__all__ = ["apply_batch", "event_columns", "EventColumns", "pred_flags", "SEQ"]
