"""The column side of the batch path (core/batch.py): the join records and moves of plain ids and stored joins,
built a column at a time (list comprehensions, one numpy conversion per column) instead of one engine call per
event.

Every value is computed by the same Python operation as in the per-event engine (`float(score) >= threshold`,
`int(ts // bucket_s) * bucket_s`, `ts - prediction ts`, ...), only applied to a column, so records, buckets and
sums are identical bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain, count, repeat
from operator import attrgetter
from typing import Any

import numpy as np

from .engine import BUCKET_SHARD, DEFAULT_VARIANT, DEFAULT_VERSION, Engine, OutcomeRecord, PredRecord
from .events import Decoded
from .list_arrays import f64, i64
from .moves import NO_FEATURES, MoveColumns
from .stats import UNL

SEQ = 4
"""Sequence numbers per event: an event's moves are numbered event index · SEQ + their rank within it."""


def _bucket_indices(engine: Engine, models: Sequence[str], versions: Sequence[str], variants: Sequence[str],
                    ts: Sequence[float]) -> np.ndarray:
    """The engine's bucket index of each (model, version, variant, ts) (every shard's in one bucket: BUCKET_SHARD),
    new buckets numbered in order of first sight. Each event's (model, version, variant) is looked up once in a
    dict; the bucket starts and the grouping by (series, start) are numpy steps over the batch; the engine's index
    is consulted once per distinct bucket. Times or widths numpy cannot floor exactly take a key per event
    (`_bucket_list`)."""
    n = len(ts)
    starts = _start_array(ts, engine.s.bucket_s)
    if starts is None or n == 0:
        return np.asarray(_bucket_list(engine, models, versions, variants, ts), dtype=np.int64)
    seen: dict[tuple[Any, ...], int] = {}  # each series hashed once per event: its first position
    first = i64(list(map(seen.setdefault, zip(models, versions, variants), count())))
    code = np.zeros(n, dtype=np.int64)  # first position -> series number (only first positions are read)
    code[list(seen.values())] = np.arange(len(seen))
    series = code[first]
    order = np.lexsort((starts, series))  # stable: each group's first element is its first event
    s_sorted, t_sorted = series[order], starts[order]
    new = np.empty(n, dtype=bool)
    new[0] = True
    np.not_equal(s_sorted[1:], s_sorted[:-1], out=new[1:])
    new[1:] |= t_sorted[1:] != t_sorted[:-1]
    group = np.empty(n, dtype=np.int64)
    group[order] = np.cumsum(new) - 1
    firsts = order[new]  # each group's first event
    keys = list(seen)
    index = engine._index
    bucket_of = np.empty(len(firsts), dtype=np.int64)
    start_of, series_of = starts[firsts].tolist(), series[firsts].tolist()
    for g in np.argsort(firsts, kind="stable").tolist():  # groups in order of first sight, as the events had them
        m, v, a = keys[series_of[g]]
        key = (m, v, a, start_of[g], BUCKET_SHARD)
        b = index.get(key)
        if b is None:
            b = index[key] = len(index)
        bucket_of[g] = b
    return bucket_of[group]


def _bucket_list(engine: Engine, models: Sequence[str], versions: Sequence[str], variants: Sequence[str],
                 ts: Sequence[float]) -> list[int]:
    """_bucket_indices by a key per event (any times and widths: bucket_starts' Python rule)."""
    starts = bucket_starts(ts, engine.s.bucket_s)
    index = engine._index
    seen: dict[tuple[Any, ...], int] = {}  # each key hashed once: its first position, the keys in order of first sight
    firsts = list(map(seen.setdefault, zip(models, versions, variants, starts, repeat(BUCKET_SHARD)), count()))
    for key in seen:
        if key not in index:
            index[key] = len(index)
    of_first = dict(zip(seen.values(), map(index.__getitem__, seen)))
    return list(map(of_first.__getitem__, firsts))


def bucket_starts(ts: Sequence[float], bs: int) -> list[int]:
    """`int(t // bs) * bs` of each time: one numpy floor division (the same float division as Python's) when the
    bucket width is an int and every time a float within ±2**52, so each start is exact; Python otherwise."""
    arr = _start_array(ts, bs)
    if arr is not None:
        return arr.tolist()  # type: ignore[no-any-return]
    return [int(t // bs) * bs for t in ts]


def _start_array(ts: Sequence[float], bs: int) -> np.ndarray | None:
    """bucket_starts as an int64 array when numpy gives them exactly (see there), else None."""
    if ts and type(bs) is int and bs > 0 and set(map(type, ts)) == {float}:
        arr = f64(ts)
        if float(np.abs(arr).max()) < _EXACT:
            return np.floor_divide(arr, bs).astype(np.int64) * bs
    return None


def bool_ints(flags: list[bool]) -> np.ndarray:
    """i64 of a list of bools (0 and 1), read as bytes in one C pass; i64 when any item is not a bool."""
    if list(map(type, flags)).count(bool) == len(flags):
        return np.frombuffer(bytes(flags), dtype=np.uint8).astype(np.int64)
    return i64(flags)


_EXACT = 2.0 ** 52
"""Times below this in magnitude have exact int64 bucket starts."""


def apply_plain(engine: Engine, ok: Sequence[tuple[Decoded, int]], evs: list[Any], lone_at: np.ndarray,
                head_at: np.ndarray, tail_at: np.ndarray) -> None:
    """New join rows of the plain predictions, the outcomes of the paired ones, and their moves as columns (event
    indices as batch._group_arrays gives them)."""
    s = engine.s
    result = engine.result
    at = np.concatenate((lone_at, head_at))
    preds, tail = at.tolist(), tail_at.tolist()
    n_lone, n, m = len(lone_at), len(preds), len(tail)
    pev = [evs[i] for i in preds]
    pids = [e.prediction_id for e in pev]
    models = [e.model for e in pev]
    versions = [e.model_version or DEFAULT_VERSION for e in pev]
    variants = [e.variant or DEFAULT_VARIANT for e in pev]
    scores = [float(e.score) for e in pev]
    default = s.threshold
    own = [e.threshold for e in pev]
    flagged = [sc >= (default if t is None else t) for sc, t in zip(scores, own)]
    feats = [e.features for e in pev]
    ts = [ok[i][0].ts for i in preds]
    shards = [ok[i][1] for i in preds]
    slices = [engine._slice_values(f) for f in feats] if s.slice_features else [None] * n
    buckets = _bucket_indices(engine, models, versions, variants, ts)
    labels = [int(evs[j].label) for j in tail]
    ts_o = [ok[j][0].ts for j in tail]
    shards_o = [ok[j][1] for j in tail]
    recs = list(map(PredRecord, pids, models, versions, variants, ts, scores, flagged, shards,
                    chain(repeat(None, n_lone), labels), chain(repeat(None, n_lone), ts_o), repeat(False), slices))
    result.upserts.update(zip(zip(pids, models, variants), recs))
    pids_o = pids[n_lone:]
    outs = list(map(OutcomeRecord, pids_o, labels, ts_o, shards_o, repeat(True)))
    result.outcomes.update(zip(pids_o, outs))
    result.outcome_deletes.difference_update(pids_o)
    engine._seen["prediction"] += n
    engine._seen["outcome"] += m
    _newest(result.max_ts, "prediction", ts)
    _newest(result.max_ts, "outcome", ts_o)
    delays = [to - tp for to, tp in zip(ts_o, ts[n_lone:])]
    cols = _plain_columns(preds, at, n_lone, tail, tail_at, buckets, flagged, scores, labels, delays,
                          [f or NO_FEATURES for f in feats], slices)
    if own.count(None) == n:  # no event's own threshold (identity compares): the config's for all
        value = np.full(n, default, dtype=np.float64)
        cols.t_own = np.zeros(n, dtype=bool)
    else:
        value = np.array(own, dtype=np.float64)  # None (the config's threshold) becomes NaN
        cols.t_own = value == value
        value[~cols.t_own] = default
    cols.t_bucket, cols.t_value = cols.bucket[:n], value
    engine._moves.columns.append(cols)


def _newest(max_ts: dict[str, float], kind: str, ts: list[float]) -> None:
    """Raise the batch's newest event time of `kind` to the newest of `ts`."""
    if ts:
        newest = max(ts)
        if newest > max_ts.get(kind, -1.0):
            max_ts[kind] = newest


def _plain_columns(preds: list[int], preds_at: np.ndarray, n_lone: int, tail: list[int], tail_at: np.ndarray,
                   buckets: np.ndarray, flagged: list[bool],
                   scores: list[float], labels: list[int], delays: list[float], f_dicts: list[dict[str, object]],
                   slices: list[dict[str, str] | None]) -> MoveColumns:
    """The plain events' moves: each prediction enters the unlabelled state (seq i·SEQ); each paired outcome
    records its delay and moves its prediction from unlabelled (seq j·SEQ) to its label (seq j·SEQ + 1)."""
    n, m = len(preds), len(tail)
    seq_p = preds_at * SEQ
    seq_o = tail_at * SEQ
    bk = buckets
    f_bucket = buckets.tolist()
    flag = bool_ints(flagged)
    score = f64(scores)
    bk_o, flag_o, score_o = bk[n_lone:], flag[n_lone:], score[n_lone:]
    ones = np.ones(n, dtype=np.float64)
    slice_moves: list[tuple[int, str, str, int, int, int]] = []
    s_seq: list[int] = []
    if slices and slices[0] is not None:
        for i, b, sv, f in zip(preds, f_bucket, slices, flagged):
            if sv:
                for name, value in sv.items():
                    slice_moves.append((b, name, value, UNL, int(f), 1))
                    s_seq.append(i * SEQ)
        _slice_relabels(slice_moves, s_seq, tail, f_bucket[n_lone:], slices[n_lone:], flagged[n_lone:], labels)
    return MoveColumns(
        m_seq=np.concatenate([seq_p, seq_o, seq_o + 1]),
        bucket=np.concatenate([bk, bk_o, bk_o]),
        state=np.concatenate([np.full(n, UNL, dtype=np.int64), np.full(m, UNL, dtype=np.int64),
                              i64(labels)]),
        flag=np.concatenate([flag, flag_o, flag_o]),
        score=np.concatenate([score, score_o, score_o]),
        sign=np.concatenate([ones, -ones[:m], ones[:m]]),
        d_seq=seq_o,
        d_bucket=bk_o,
        d_delay=f64(delays),
        d_sign=ones[:m].copy(),
        f_seq=seq_p,
        f_bucket=f_bucket,
        f_dicts=f_dicts,
        s_seq=s_seq,
        slice_moves=slice_moves)


def _slice_relabels(slice_moves: list[tuple[int, str, str, int, int, int]], s_seq: list[int], at: list[int],
                    buckets: list[int], slices: list[dict[str, str] | None], flagged: list[bool],
                    labels: list[int]) -> None:
    """Slice moves of predictions leaving the unlabelled state (seq j·SEQ) for their label (seq j·SEQ + 1)."""
    for j, b, sv, f, label in zip(at, buckets, slices, flagged, labels):
        if sv:
            for name, value in sv.items():
                slice_moves.append((b, name, value, UNL, int(f), -1))
                s_seq.append(j * SEQ)
            for name, value in sv.items():
                slice_moves.append((b, name, value, label, int(f), 1))
                s_seq.append(j * SEQ + 1)


def apply_stored(engine: Engine, ok: Sequence[tuple[Decoded, int]], evs: list[Any], at_array: np.ndarray,
                 recs: list[PredRecord] | None = None) -> None:
    """The lone outcomes of stored, unlabelled predictions (see core/batch.py): each outcome is recorded and matched,
    its prediction takes its label, records the delay and moves from unlabelled to the label, as columns. `recs`:
    each outcome's stored prediction, as batch._group_arrays found it (None: looked up in the view). The view is not
    updated (as for plain ids: nothing reads it after the batch path)."""
    result = engine.result
    at = at_array.tolist()
    m = len(at)
    oev = list(map(evs.__getitem__, at))
    pids = [e.prediction_id for e in oev]
    labels = [int(e.label) for e in oev]
    if not {0, 1}.issuperset(labels):  # decoded labels are 0 or 1; for any other the per-event engine decides
        raise ValueError("a label other than 0 or 1")
    ts = [ok[j][0].ts for j in at]
    shards = [ok[j][1] for j in at]
    if recs is None:
        recs = [r for r, in map(engine.view.preds.__getitem__, pids)]
    outs = list(map(OutcomeRecord, pids, labels, ts, shards, repeat(True)))
    result.outcomes.update(zip(pids, outs))
    result.outcome_deletes.difference_update(pids)
    engine._seen["outcome"] += m
    _newest(result.max_ts, "outcome", ts)
    # every field of each record in one read of it (C-level), then as columns
    models, versions, variants, p_ts, flagged, scores, slices = zip(*map(_STORED_FIELDS, recs))
    buckets = _bucket_indices(engine, models, versions, variants, p_ts)
    delays = [t - tp for t, tp in zip(ts, p_ts)]
    # the stored records keep their label: their rows are not rewritten (the outcome rows carry the label) and the
    # view is dropped after the batch, so nothing reads them again (setting it cost ~1,070 instructions a record)
    seq = at_array * SEQ
    bk = buckets
    flag = bool_ints(list(flagged))
    score = f64(scores)
    ones = np.ones(m, dtype=np.float64)
    slice_moves: list[tuple[int, str, str, int, int, int]] = []
    s_seq: list[int] = []
    if any(slices):
        _slice_relabels(slice_moves, s_seq, at, buckets.tolist(), list(slices), list(flagged), labels)
    engine._moves.columns.append(MoveColumns(
        m_seq=np.concatenate([seq, seq + 1]), bucket=np.concatenate([bk, bk]),
        state=np.concatenate([np.full(m, UNL, dtype=np.int64), i64(labels)]),
        flag=np.concatenate([flag, flag]), score=np.concatenate([score, score]), sign=np.concatenate([-ones, ones]),
        d_seq=seq, d_bucket=bk, d_delay=f64(delays), d_sign=ones,
        f_seq=[], f_bucket=[], f_dicts=[], s_seq=s_seq, slice_moves=slice_moves))


_STORED_FIELDS = attrgetter("model", "model_version", "variant", "ts", "flagged", "score", "slice_values")
"""The fields of a stored prediction the stored-join path reads."""


__all__ = ["apply_plain", "apply_stored", "SEQ"]
