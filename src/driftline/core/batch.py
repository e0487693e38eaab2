"""The batch path of the engine: the common events of a batch applied as columns, the rare ones event by event.

A prediction id is *plain* in a batch when nothing is stored for it (no join row, no outcome) and the batch holds
either its one prediction alone or its one prediction followed by its one outcome. Plain ids cannot interact with
any other event, so their effect (a new join row, its outcome, the moves into the unlabelled and labelled states,
its label delay and feature dict) is computed for all of them at once. Every other event (duplicates, shadow
variants, early outcomes, corrections, stale outcomes, outcomes of stored predictions) goes through the per-event
engine, in arrival order. Each move carries the sequence number of its event, and `Moves.deltas` merges both in
that order, so every bucket sum adds the same terms in the same order as the per-event engine: results are
identical bit for bit (tests/test_batch_engine.py checks it on dirty streams, any arrival order and batch split).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .engine import DEFAULT_VARIANT, DEFAULT_VERSION, Engine, OutcomeRecord, PredRecord
from .events import Decoded, Prediction
from .moves import NO_FEATURES, MoveColumns
from .stats import UNL

SEQ = 4
"""Sequence numbers per event: an event's moves are numbered event index · SEQ + their rank within it."""


def _is_pred(ev: object) -> bool:
    return isinstance(ev, Prediction)


def apply_batch(engine: Engine, ok: Sequence[tuple[Decoded, int]]) -> None:
    """Apply a batch of accepted (event, shard) pairs to the engine: plain ids as columns, the rest per event."""
    lone, head, tail = _plain(engine, ok)
    plain = set(lone)
    plain.update(head)
    plain.update(tail)
    moves = engine._moves
    for i, (d, shard) in enumerate(ok):
        if i not in plain:
            moves.at = i * SEQ
            engine.apply(d, shard)
    moves.at = 0
    if lone or head:
        _apply_plain(engine, ok, lone, head, tail)


def _plain(engine: Engine, ok: Sequence[tuple[Decoded, int]]) -> tuple[list[int], list[int], list[int]]:
    """(indices of plain lone predictions, of plain predictions with their outcome later in the batch, of those
    outcomes), the last two aligned; every other event is left to the per-event engine."""
    first: dict[str, int] = {}
    second: dict[str, int] = {}
    crowded: set[str] = set()
    for i, (d, _) in enumerate(ok):
        pid = d.event.prediction_id
        if pid not in first:
            first[pid] = i
        elif pid not in second:
            second[pid] = i
        else:
            crowded.add(pid)
    stored_p, stored_o = engine.view.preds, engine.view.outcomes
    lone: list[int] = []
    head: list[int] = []
    tail: list[int] = []
    for pid, i in first.items():
        if pid in crowded or pid in stored_p or pid in stored_o or not _is_pred(ok[i][0].event):
            continue
        j = second.get(pid)
        if j is None:
            lone.append(i)
        elif not _is_pred(ok[j][0].event):
            head.append(i)
            tail.append(j)
    return lone, head, tail


def _apply_plain(engine: Engine, ok: Sequence[tuple[Decoded, int]], lone: list[int], head: list[int],
                 tail: list[int]) -> None:
    """New join rows of the plain predictions, the outcomes of the paired ones, and their moves as columns."""
    s = engine.s
    result = engine.result
    bs = s.bucket_s
    index = engine._index
    preds = lone + head
    n_lone = len(lone)
    buckets: list[int] = []
    recs: list[PredRecord] = []
    slicing = bool(s.slice_features)
    upserts = result.upserts
    for i in preds:
        d, shard = ok[i]
        ev: Prediction = d.event  # type: ignore[assignment]
        ts = d.ts
        variant = ev.variant or DEFAULT_VARIANT
        score = float(ev.score)
        threshold = s.threshold if ev.threshold is None else ev.threshold
        rec = PredRecord(ev.prediction_id, ev.model, ev.model_version or DEFAULT_VERSION, variant, ts, score,
                         score >= threshold, shard,
                         slice_values=engine._slice_values(ev.features) if slicing else None)
        key = (rec.model, rec.model_version, variant, int(ts // bs) * bs, shard)
        b = index.get(key)
        if b is None:
            b = index[key] = len(index)
        buckets.append(b)
        recs.append(rec)
        upserts[(rec.prediction_id, rec.model, variant)] = rec
    outs: list[OutcomeRecord] = []
    for k, j in enumerate(tail):
        d, shard = ok[j]
        rec = recs[n_lone + k]
        label = int(d.event.label)  # type: ignore[union-attr]
        out = OutcomeRecord(rec.prediction_id, label, d.ts, shard, matched=True)
        result.outcomes[rec.prediction_id] = out
        result.outcome_deletes.discard(rec.prediction_id)
        rec.label, rec.label_ts = label, d.ts
        outs.append(out)
    engine._seen["prediction"] += len(preds)
    engine._seen["outcome"] += len(tail)
    newest_p = max(ok[i][0].ts for i in preds)
    if newest_p > result.max_ts.get("prediction", -1.0):
        result.max_ts["prediction"] = newest_p
    if tail:
        newest_o = max(o.ts for o in outs)
        if newest_o > result.max_ts.get("outcome", -1.0):
            result.max_ts["outcome"] = newest_o
    engine._moves.columns.append(_columns(ok, preds, n_lone, tail, buckets, recs, outs))


def _columns(ok: Sequence[tuple[Decoded, int]], preds: list[int], n_lone: int, tail: list[int], buckets: list[int],
             recs: list[PredRecord], outs: list[OutcomeRecord]) -> MoveColumns:
    """The plain events' moves: each prediction enters the unlabelled state (seq i·SEQ); each paired outcome
    records its delay and moves its prediction from unlabelled (seq j·SEQ) to its label (seq j·SEQ + 1)."""
    n = len(preds)
    seq_p = np.asarray(preds, dtype=np.int64) * SEQ
    seq_o = np.asarray(tail, dtype=np.int64) * SEQ
    bk = np.asarray(buckets, dtype=np.int64)
    flag = np.fromiter((r.flagged for r in recs), dtype=np.int64, count=n)
    score = np.fromiter((r.score for r in recs), dtype=np.float64, count=n)
    bk_o, flag_o, score_o = bk[n_lone:], flag[n_lone:], score[n_lone:]
    labels = np.fromiter((o.label for o in outs), dtype=np.int64, count=len(outs))
    m = len(outs)
    ones = np.ones(n, dtype=np.float64)
    slice_moves: list[tuple[int, str, str, int, int, int]] = []
    s_seq: list[int] = []
    for i, b, r in zip(preds, buckets, recs):
        if r.slice_values:
            for name, value in r.slice_values.items():
                slice_moves.append((b, name, value, UNL, int(r.flagged), 1))
                s_seq.append(i * SEQ)
    for k, j in enumerate(tail):
        r = recs[n_lone + k]
        if r.slice_values:
            b = buckets[n_lone + k]
            for name, value in r.slice_values.items():
                slice_moves.append((b, name, value, UNL, int(r.flagged), -1))
                s_seq.append(j * SEQ)
            for name, value in r.slice_values.items():
                slice_moves.append((b, name, value, int(r.label), int(r.flagged), 1))  # type: ignore[arg-type]
                s_seq.append(j * SEQ + 1)
    return MoveColumns(
        m_seq=np.concatenate([seq_p, seq_o, seq_o + 1]),
        bucket=np.concatenate([bk, bk_o, bk_o]),
        state=np.concatenate([np.full(n, UNL, dtype=np.int64), np.full(m, UNL, dtype=np.int64), labels]),
        flag=np.concatenate([flag, flag_o, flag_o]),
        score=np.concatenate([score, score_o, score_o]),
        sign=np.concatenate([ones, -ones[:m], ones[:m]]),
        d_seq=seq_o,
        d_bucket=bk_o,
        d_delay=np.fromiter((o.ts - r.ts for o, r in zip(outs, recs[n_lone:])), dtype=np.float64, count=m),
        d_sign=ones[:m].copy(),
        f_seq=seq_p.tolist(),
        f_bucket=list(buckets),
        f_dicts=[ok[i][0].event.features or NO_FEATURES for i in preds],  # type: ignore[union-attr]
        s_seq=s_seq,
        slice_moves=slice_moves)


__all__ = ["apply_batch", "SEQ"]
