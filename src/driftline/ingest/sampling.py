"""The ingestion hook of multivariate drift: each batch's accepted predictions offered to their bucket's sample.

Called once per batch from Pipeline.process_batch, inside its write transaction, after the engine: the
predictions set aside by the engine (internal_error) are left out; duplicates need no care, since a repeated id
has the same hash and a sample keeps one row per hash.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import compress, count
from operator import itemgetter
from typing import Any

import numpy as np

from sqlalchemy import Connection

from ..core.batch_columns import SEQ
from ..core.engine import DEFAULT_VARIANT, DEFAULT_VERSION, EngineSettings
from ..core.events import DeadLetter, Decoded, Prediction
from ..core.feature_columns import FeatureColumns
from ..core.list_arrays import f64
from ..core.sample import (MAX_TAU, FeatureSample, id_hashes, sample_rows, sample_sorted, sampleable, sampled_column,
                           sampled_columns, smallest_distinct)
from ..core.sample_columns import BatchColumns, SampleColumns
from ..storage.samples import SampleKey, merge_into
from .labels import Positioned


Chosen = list[tuple[SampleKey, list[int], list[int], int, bool]]
"""Per bucket: (key, its candidates' hashes sorted, their positions among the predictions, its threshold, whether
sample_sorted keeps them as they are: distinct_within(hashes, k, threshold), found for the whole batch at once)."""


def batch_samples(settings: EngineSettings, events: Sequence[Decoded], k: int) -> dict[SampleKey, FeatureSample]:
    """Per bucket, the sample of the given events' predictions (outcomes are skipped). Feature rows are built
    only for the candidates: the predictions holding one of a bucket's k smallest hashes."""
    evs, chosen, _, _ = _candidates(settings, events, k)
    keep, most = settings.declared_features, settings.max_features
    rows = sample_rows([evs[i].features for _, _, idx, _, _ in chosen for i in idx], keep, most)
    out: dict[SampleKey, FeatureSample] = {}
    done = 0
    for key, hl, idx, tau, _ in chosen:
        out[key] = sample_sorted(hl, rows[done:done + len(idx)], k, tau)
        done += len(idx)
    return out


def batch_columns(settings: EngineSettings, events: Sequence[Decoded], k: int,
                  features: FeatureColumns | None = None) -> dict[SampleKey, SampleColumns | FeatureSample]:
    """batch_samples' samples, each kept as columns (cut from the batch's candidates' columns, a column per feature
    name) when its candidates' hashes are distinct and at most k, else as rows (sample_sorted decides).

    `features`: the engine's feature columns of the same events (EngineResult.feature_columns, rows numbered by
    event index · SEQ); the candidates' values are taken from there when every candidate has a row, instead of
    transposing their dicts again (the same values go through the same sample_values rule, which also tells which
    columns hold no None). The names are put in order once per batch (BatchColumns)."""
    evs, chosen, at, pos = _candidates(settings, events, k, features)
    keep, most = settings.declared_features, settings.max_features
    picked = [i for _, _, idx, _, _ in chosen for i in idx]
    if features is None or not picked:
        raw = None
    else:  # the rows found once for every prediction (pos) when the grouping used the engine's buckets
        raw = features.rows_at(at[picked] * SEQ) if pos is None else features.rows_of(pos[picked])
    dicts: list[Mapping[str, object]] | None = None
    gaps: list[bool] | None = None  # whether each column may hold a None, when sampled_column said so
    if raw is None:
        dicts = sampleable([evs[i].features for i in picked], keep, most)
        names, cols = sampled_columns(dicts)
    else:
        names = list(features.names)  # type: ignore[union-attr]
        sampled = list(map(sampled_column, raw))
        cols, gaps = [col for col, _ in sampled], [may for _, may in sampled]
    batch = BatchColumns.of(names, cols, gaps)
    out: dict[SampleKey, SampleColumns | FeatureSample] = {}
    done = 0
    for key, hl, idx, tau, distinct in chosen:
        lo, done = done, done + len(idx)
        if distinct:
            out[key] = batch.cut(tau, hl, lo, done)
        else:  # a repeated id among the candidates: sample_of picks a row by its encoding
            mine = dicts[lo:done] if dicts is not None else sampleable([evs[i].features for i in idx], keep, most)
            out[key] = sample_sorted(hl, sample_rows(mine, keep, most), k, tau)
    return out


def _candidates(settings: EngineSettings, events: Sequence[Decoded], k: int, features: FeatureColumns | None = None
                ) -> tuple[list[Prediction], Chosen, np.ndarray, np.ndarray | None]:
    """(the events' predictions, each bucket's candidates, each prediction's index among the events, each
    prediction's row among `features` when they grouped it, else None): the candidates are the predictions
    holding one of the bucket's k smallest hashes.

    The predictions are grouped with numpy: one stable sort by (model/version/variant, bucket start, hash) puts
    each bucket's (hash, position) pairs in the order sorting them would; buckets come in order of first sight.
    `features` (the engine's rows of the same events, see batch_columns): the events, ids and prediction flags are
    the lists the engine made of them, and each prediction's model/version/variant and bucket start are its engine
    bucket's, when every prediction has a row there and the widths agree."""
    if features is not None and len(features.events) == len(events):  # the engine listed them: its lists
        every, mask = features.events, features.is_pred
    else:
        every = [d.event for d in events]  # (comprehensions: CPython 3.11 specialises attribute reads, ~2x map)
        types = list(map(type, every))
        kinds = frozenset(t for t in set(types) if issubclass(t, Prediction))  # isinstance per type: slow on Structs
        mask = list(map(kinds.__contains__, types))
        features = None
    evs: list[Prediction] = list(compress(every, mask))
    if not evs:
        return [], [], np.zeros(0, dtype=np.int64), None
    n = len(evs)
    pred_at = np.flatnonzero(np.frombuffer(bytes(mask), dtype=bool))
    pids = [e.prediction_id for e in evs] if features is None else list(compress(features.pids, mask))
    hashes = id_hashes(pids).astype(np.uint64)
    bs = settings.bucket_s
    groups: list[tuple[Any, ...]]
    pos = None if features is None or features.bucket_s != bs else features.positions(pred_at * SEQ)
    grouped = None if pos is None else features.series_of(pos)  # type: ignore[union-attr]
    if grouped is not None:  # one code per (series, bucket start): the starts sort as zeros
        groups, codes = grouped
        starts = np.zeros(n, dtype=np.int64)
        order = np.lexsort((hashes, codes))
        runs = np.flatnonzero(np.r_[True, np.diff(codes[order]) != 0])
    else:
        preds = list(compress(events, mask))
        starts = np.floor_divide(f64([d.ts for d in preds]), bs).astype(
            np.int64) * bs
        series, codes = _series(evs)
        groups = list(series)
        order = np.lexsort((hashes, starts, codes))
        runs = np.flatnonzero(np.r_[True, (np.diff(codes[order]) != 0) | (np.diff(starts[order]) != 0)])
    ends = np.r_[runs[1:], n].tolist()
    firsts = np.minimum.reduceat(order, runs)
    sorted_hashes = hashes[order]
    hs, at, st, gs = sorted_hashes.tolist(), order.tolist(), starts[order].tolist(), codes[order].tolist()
    ties = np.cumsum(np.r_[0, sorted_hashes[1:] == sorted_hashes[:-1]])  # ties[j]: equal neighbours up to j
    repeats = ties.tolist() if ties[-1] else None  # None: every hash of the batch is distinct
    chosen: Chosen = []
    for r in np.argsort(firsts, kind="stable").tolist():
        a, e = int(runs[r]), ends[r]
        key = groups[gs[a]] if grouped is not None else (*groups[gs[a]], st[a])
        if e - a <= k:  # at most k predictions: every one is a candidate
            chosen.append((key, hs[a:e], at[a:e], MAX_TAU,  # type: ignore[arg-type]
                           repeats is None or repeats[e - 1] == repeats[a]))
            continue
        if repeats is None or repeats[e - 1] == repeats[a]:  # distinct hashes: the k smallest, the k-th is tau
            chosen.append((key, hs[a:a + k], at[a:a + k], hs[a + k - 1], True))  # type: ignore[arg-type]
            continue
        cand = smallest_distinct(list(zip(hs[a:e], at[a:e])), k)
        tau = cand.items[-1][0] if cand.cut else MAX_TAU
        m = len(cand.items)  # a prefix of the run; distinct only if it holds at most k (then it was cut)
        distinct = m <= k and (repeats is None or repeats[a + m - 1] == repeats[a])
        chosen.append((key, [h for h, _ in cand.items], [i for _, i in cand.items], tau,  # type: ignore[arg-type]
                       distinct))
    return evs, chosen, pred_at, pos


_FIRST = itemgetter(0)


def _series(evs: list[Prediction]) -> tuple[list[tuple[str, str, str]], np.ndarray]:
    """(distinct (model, version, variant) keys with defaults filled in, each prediction's index into them)."""
    seen: dict[tuple[str, str | None, str | None], int] = {}  # each triple hashed once: its first position
    firsts = np.fromiter(map(seen.setdefault, [(e.model, e.model_version, e.variant) for e in evs], count()),
                         dtype=np.int64, count=len(evs))
    index: dict[tuple[str, str, str], int] = {}
    code = np.zeros(len(evs), dtype=np.int64)  # first position -> index (only first positions are read)
    for (m, v, a), first in seen.items():
        code[first] = index.setdefault((m, v or DEFAULT_VERSION, a or DEFAULT_VARIANT), len(index))
    return list(index), code[firsts]


def record_samples(conn: Connection, settings: EngineSettings, ok: Sequence[tuple[Decoded, int]],
                   positions: Sequence[Positioned], failed: Sequence[DeadLetter], k: int,
                   features: FeatureColumns | None = None) -> None:
    """Merge the batch's samples into the stored bucket samples (in the batch's write transaction); `positions`
    are the accepted events' records, `failed` the engine's internal_error letters (left out), `features` the
    engine's feature columns of `ok` (EngineResult.feature_columns; used only when nothing failed, so that the
    events keep their indices)."""
    out = {(f.source, f.partition, f.offset) for f in failed}
    if out:
        events = [d for (d, _), r in zip(ok, positions) if (r.source, r.partition, r.offset) not in out]
        features = None
    else:
        events = list(map(_FIRST, ok))
    deltas = batch_columns(settings, events, k, features)
    if deltas:
        merge_into(conn, deltas, k, settings.bucket_s)
