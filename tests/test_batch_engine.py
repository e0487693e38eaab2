"""The batch path (core/batch.py) against the per-event engine: identical results, bit for bit, on dirty streams.

Both run over the same batches with a join store kept in memory the way the database keeps it (each batch loads a
fresh copy of the state of its ids, each prediction with the label in force of its outcome row; upserts, deletes
and outcomes are written back, an outcome folded into its predictions before it is deleted), with implicit negatives and
expiry between batches. Every batch's bucket deltas (encoded bytes and float sums compared exactly), join-state
changes, counters and newest event times must be equal, and so must the final join state and bucket totals.
"""

from __future__ import annotations

from collections import Counter

import msgspec
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driftline.core.batch import apply_batch
from driftline.core.engine import (Engine, EngineResult, EngineSettings, JoinView, OutcomeRecord, PredRecord,
                                   label_in_force)
from driftline.core.events import Decoded
from driftline.core.stats import BucketStats

from helpers import decoded, outcome, pred

T0 = 1_700_000_000.0
CONFIGS = [EngineSettings(slice_features=("country", "flag")),
           EngineSettings(max_features=2),
           EngineSettings(declared_features=("amount", "country"), bucket_s=86400)]


class JoinStore:
    """The store's join tables and buckets in memory; each batch sees copies, as if loaded from the database."""

    def __init__(self) -> None:
        self.preds: dict[tuple[str, str, str], PredRecord] = {}
        self.outcomes: dict[str, OutcomeRecord] = {}
        self.buckets: dict[tuple, BucketStats] = {}
        self.counters: Counter[tuple[str, str]] = Counter()

    def load(self, ids: set[str]) -> JoinView:
        view = JoinView()
        for key, rec in sorted(self.preds.items()):
            if key[0] in ids:
                view.preds.setdefault(key[0], []).append(_copy(rec))
        for pid, out in self.outcomes.items():
            if pid in ids:
                view.outcomes[pid] = msgspec.structs.replace(out)
                for rec in view.preds.get(pid, ()):
                    label_in_force(rec, out)
        return view

    def in_force(self, rec: PredRecord) -> PredRecord:
        """A copy of a stored prediction with its label in force."""
        got = _copy(rec)
        label_in_force(got, self.outcomes.get(rec.prediction_id))
        return got

    def commit(self, r: EngineResult) -> None:
        for key, delta in r.deltas.items():
            self.buckets.setdefault(key, BucketStats()).add(delta)
        for key, rec in r.upserts.items():
            self.preds[key] = _copy(rec)
        for key in r.deletes:
            self.preds.pop(key, None)
        for pid, out in r.outcomes.items():
            self.outcomes[pid] = msgspec.structs.replace(out)
        for pid in r.outcome_deletes:
            out = self.outcomes.pop(pid, None)
            for key, rec in self.preds.items():  # folded into the predictions that stay
                if key[0] == pid and out is not None:
                    label_in_force(rec, out)
        self.counters.update(r.counters)

    def maintain(self, s: EngineSettings, watermark: float, implicit_after: float, horizon: float) -> EngineResult:
        """Implicit negatives, then expiry, with the per-event engine (as Pipeline.maintain does)."""
        engine = Engine(s, JoinView())
        mature = [_copy(r) for _, r in sorted(self.preds.items())
                  if r.label is None and r.prediction_id not in self.outcomes and r.ts < watermark - implicit_after]
        engine.mature(mature)
        matured = {r.key: r for r in mature}
        old = [matured.get(k, self.in_force(r)) for k, r in sorted(self.preds.items()) if r.ts < watermark - horizon]
        old_outs = [msgspec.structs.replace(o) for _, o in sorted(self.outcomes.items()) if o.ts < watermark - horizon]
        engine.expire(old, old_outs)
        result = engine.finish()
        self.commit(result)
        return result


def _copy(rec: PredRecord) -> PredRecord:
    return msgspec.structs.replace(rec, slice_values=None if rec.slice_values is None else dict(rec.slice_values))


def _per_event(s: EngineSettings, view: JoinView, ok: list[tuple[Decoded, int]]) -> EngineResult:
    engine = Engine(s, view)
    for d, shard in ok:
        engine.apply(d, shard)
    return engine.finish()


def _batched(s: EngineSettings, view: JoinView, ok: list[tuple[Decoded, int]]) -> EngineResult:
    engine = Engine(s, view)
    apply_batch(engine, ok)
    return engine.finish()


def _stats_doc(b: BucketStats) -> tuple:
    """Everything a bucket holds, floats as their exact bit patterns."""
    return (b.conf.tobytes(), b.hist.tobytes(), b.psum.tobytes(), b.sums.tobytes(), b.delay.tobytes(),
            {k: (v.num, v.cat, v.missing) for k, v in b.features.items()}, b.expired, b.implicit,
            {k: {v: c.tolist() for v, c in vals.items()} for k, vals in b.slices.items()}, b.flag_range, b.to_bytes())


def _result_doc(r: EngineResult) -> tuple:
    return ({k: _stats_doc(v) for k, v in r.deltas.items()},
            {k: msgspec.structs.astuple(v) for k, v in r.upserts.items()}, set(r.deletes),
            {k: msgspec.structs.astuple(v) for k, v in r.outcomes.items()}, set(r.outcome_deletes),
            dict(r.counters), dict(r.max_ts), r.conflict_example)


@st.composite
def dirty_streams(draw):
    """Predictions (some shadow-scored under a second variant, some duplicated, some with out-of-range features),
    their outcomes (none, one, corrections, duplicates, stale ones, outcomes before their prediction), orphan
    outcomes; in any order, with shards."""
    n = draw(st.integers(1, 30))
    raws: list[bytes] = []
    for i in range(n):
        ts = T0 + draw(st.integers(0, 30 * 86400))
        score = draw(st.floats(0, 1, allow_nan=False))
        feats = {"amount": draw(st.floats(-1e6, 1e6, allow_nan=False)),
                 "country": draw(st.sampled_from(["FR", "DE", None])), "flag": draw(st.booleans())}
        if draw(st.booleans()):
            feats["extra"] = draw(st.sampled_from(["x", 1.5, None]))
        threshold = draw(st.sampled_from([None, 0.3, 0.55, 0.8]))  # varying inside buckets: their flag_range
        kw = {"features": feats, **({"threshold": threshold} if threshold is not None else {})}
        variant = draw(st.sampled_from(["A", "B"]))
        raws.append(pred(f"id{i}", score, ts, variant=variant, **kw))
        if draw(st.integers(0, 4)) == 0:  # shadow mode: the same id under the other variant
            raws.append(pred(f"id{i}", draw(st.floats(0, 1)), ts, variant="shadow", **kw))
        if draw(st.integers(0, 5)) == 0:  # a duplicate
            raws.append(raws[-1])
        if draw(st.integers(0, 5)) == 0:  # a conflicting copy: another score, ts or model_version
            change = draw(st.sampled_from(["score", "ts", "model_version"]))
            raws.append(pred(f"id{i}", draw(st.floats(0, 1)) if change == "score" else score,
                             ts + (draw(st.integers(-3600, 3600)) if change == "ts" else 0), variant=variant,
                             **({"model_version": "v9"} if change == "model_version" else {}), **kw))
        for _ in range(draw(st.integers(0, 3))):  # outcomes: later ones are corrections, older ones stale
            raws.append(outcome(f"id{i}", draw(st.integers(0, 1)), ts + draw(st.integers(-3600, 40 * 86400))))
            if draw(st.integers(0, 6)) == 0:
                raws.append(raws[-1])
    for j in range(draw(st.integers(0, 3))):  # outcomes whose prediction never comes
        raws.append(outcome(f"orphan{j}", 1, T0 + j))
    order = draw(st.permutations(range(len(raws))))
    shards = draw(st.lists(st.integers(0, 1), min_size=len(raws), max_size=len(raws)))
    return [raws[k] for k in order], shards


def _batches(n: int, cuts: list[int]) -> list[tuple[int, int]]:
    edges = sorted({0, n, *(c % (n + 1) for c in cuts)})
    return [(a, b) for a, b in zip(edges, edges[1:]) if b > a]


def _step(s: EngineSettings, ref: JoinStore, new: JoinStore, batch: list[tuple[Decoded, int]],
          mature_after: float | None) -> None:
    """One batch through both engines (each on its own store's copy of the state): equal results, both committed;
    then, when `mature_after` is given, maintenance (implicit negatives, 20-day expiry) on both: equal results."""
    ids = {d.event.prediction_id for d, _ in batch}
    r1 = _per_event(s, ref.load(ids), batch)
    r2 = _batched(s, new.load(ids), batch)
    assert _result_doc(r2) == _result_doc(r1)
    ref.commit(r1)
    new.commit(r2)
    if mature_after is not None:
        wm = max(d.ts for d, _ in batch)
        assert _result_doc(new.maintain(s, wm, mature_after, 20 * 86400.0)) == \
            _result_doc(ref.maintain(s, wm, mature_after, 20 * 86400.0))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dirty_streams(), st.lists(st.integers(0, 400), max_size=5), st.sampled_from(CONFIGS),
       st.sampled_from([None, 7 * 86400.0]), st.booleans())
def test_batch_path_equals_per_event_engine(stream, cuts, s, implicit_after, maintain):
    raws, shards = stream
    ok = list(zip(decoded(raws), shards))
    ref, new = JoinStore(), JoinStore()
    after = 86400.0 * 30 if implicit_after is None else implicit_after
    for a, b in _batches(len(ok), cuts):
        _step(s, ref, new, ok[a:b], after if maintain else None)
    assert {k: msgspec.structs.astuple(v) for k, v in new.preds.items()} == \
        {k: msgspec.structs.astuple(v) for k, v in ref.preds.items()}
    assert {k: msgspec.structs.astuple(v) for k, v in new.outcomes.items()} == \
        {k: msgspec.structs.astuple(v) for k, v in ref.outcomes.items()}
    assert {k: _stats_doc(v) for k, v in new.buckets.items()} == {k: _stats_doc(v) for k, v in ref.buckets.items()}
    assert new.counters == ref.counters


def test_plain_ids_take_the_batch_path_and_the_rest_the_per_event_engine():
    """A lone prediction and a prediction followed by its outcome are plain; a duplicate, an early outcome and an
    id with stored state are not (so the test above exercises both paths)."""
    from driftline.core.batch import _plain

    raws = [pred("a", 0.1, T0), pred("b", 0.2, T0), outcome("b", 1, T0 + 5), outcome("c", 0, T0),
            pred("c", 0.3, T0 + 1), pred("d", 0.4, T0), pred("d", 0.4, T0), pred("e", 0.5, T0)]
    ok = [(d, 0) for d in decoded(raws)]

    def view() -> JoinView:
        return JoinView(preds={"e": [PredRecord("e", "fraud", "v", "A", T0, 0.5, True)]})
    lone, head, tail = _plain(Engine(EngineSettings(), view()), ok)
    assert (lone, head, tail) == ([0], [1], [2])
    r1 = _per_event(EngineSettings(), view(), ok)
    r2 = _batched(EngineSettings(), view(), ok)
    assert _result_doc(r2) == _result_doc(r1)
    assert r2.counters[("duplicates", "prediction")] == 2 and r2.counters[("joined", "outcome_first")] == 1
    delays = sum(v.delay.sum() for v in r2.deltas.values())  # c's outcome is stamped 1 s before it: not a delay
    assert r2.counters[("outcome_before_prediction", "")] == 1
    assert delays == 1 and np.isclose(sum(v.conf.sum() for v in r2.deltas.values()), 4)


def test_outcomes_of_stored_predictions_take_the_column_path():
    """A lone outcome of a stored, unlabelled prediction takes the stored-join columns; one of a labelled or an
    implicitly negative prediction, of an id with a stored outcome or two stored rows (shadow), a second outcome
    in the batch and an early outcome stay per event; every result equals the per-event engine's."""
    from driftline.core.batch import _groups, pred_flags

    s = EngineSettings(slice_features=("country",))
    raws = [outcome("s", 1, T0 + 50), outcome("lab", 0, T0 + 60), outcome("imp", 1, T0 + 70),
            outcome("had", 1, T0 + 80), outcome("two", 0, T0 + 90), outcome("dup", 1, T0 + 95),
            outcome("dup", 0, T0 + 99), outcome("s2", 0, T0 + 40), outcome("none", 1, T0)]
    ok = [(d, k % 2) for k, d in enumerate(decoded(raws))]

    def view() -> JoinView:
        def rec(pid: str, variant: str = "A", **kw) -> PredRecord:
            return PredRecord(pid, "fraud", "v1", variant, T0, 0.7, True, 1, slice_values={"country": "FR"}, **kw)
        return JoinView(preds={"s": [rec("s")], "lab": [rec("lab", label=1, label_ts=T0 + 5)],
                               "imp": [rec("imp", label=0, implicit=True)], "had": [rec("had")],
                               "two": [rec("two"), rec("two", "shadow")], "dup": [rec("dup")], "s2": [rec("s2")]},
                        outcomes={"had": OutcomeRecord("had", 0, T0 + 1, 1, matched=True)})
    evs = [d.event for d, _ in ok]
    lone, head, tail, stored = _groups(Engine(s, view()), [e.prediction_id for e in evs], pred_flags(evs))
    assert (lone, head, tail, stored) == ([], [], [], [0, 7])
    r1 = _per_event(s, view(), ok)
    r2 = _batched(s, view(), ok)
    assert _result_doc(r2) == _result_doc(r1)
    # the stored prediction's row is not rewritten: its outcome row, written with the batch, holds its label in force
    assert ("s", "fraud", "A") not in r2.upserts and (r2.outcomes["s"].label, r2.outcomes["s"].matched) == (1, True)


@st.composite
def predictions_then_outcomes(draw):
    """Predictions (some duplicated or shadow-scored) in the first batches, their outcomes (none, one, or a
    correction) later, so most outcomes find a stored, unlabelled prediction; in any order after the cut."""
    n = draw(st.integers(1, 25))
    preds_, outs = [], []
    for i in range(n):
        ts = T0 + draw(st.integers(0, 10 * 86400))
        feats = {"country": draw(st.sampled_from(["FR", "DE", None])), "flag": draw(st.booleans())}
        preds_.append(pred(f"id{i}", draw(st.floats(0, 1, allow_nan=False)), ts,
                           variant=draw(st.sampled_from(["A", "B"])), features=feats))
        if draw(st.integers(0, 5)) == 0:
            preds_.append(pred(f"id{i}", draw(st.floats(0, 1)), ts, variant="shadow", features=feats))
        for _ in range(draw(st.integers(0, 2))):
            outs.append(outcome(f"id{i}", draw(st.integers(0, 1)), ts + draw(st.integers(-600, 30 * 86400))))
    order = draw(st.permutations(range(len(outs))))
    return preds_ + [outs[k] for k in order], len(preds_)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(predictions_then_outcomes(), st.lists(st.integers(0, 400), max_size=4), st.sampled_from(CONFIGS),
       st.booleans())
def test_stored_joins_equal_the_per_event_engine(stream, cuts, s, maintain):
    """Outcomes of stored predictions in later batches (the stored-join columns and the per-event engine mixed),
    with implicit negatives between batches: identical results, bit for bit."""
    from driftline.core.batch import _groups, pred_flags

    raws, n_preds = stream
    ok = [(d, i % 2) for i, d in enumerate(decoded(raws))]
    ref, new = JoinStore(), JoinStore()
    taken = 0
    for a, b in _batches(len(ok), [n_preds, *cuts]):
        batch = ok[a:b]
        evs = [d.event for d, _ in batch]
        ids = {e.prediction_id for e in evs}
        taken += len(_groups(Engine(s, new.load(ids)), [e.prediction_id for e in evs], pred_flags(evs))[3])
        _step(s, ref, new, batch, 5 * 86400.0 if maintain else None)
    assert {k: _stats_doc(v) for k, v in new.buckets.items()} == {k: _stats_doc(v) for k, v in ref.buckets.items()}
    assert new.counters == ref.counters
    if len(ok) > n_preds and not cuts and not maintain:  # one cut, between the predictions and the outcomes
        first_outcomes = {d.event.prediction_id for d, _ in ok[n_preds:]}
        lone = [p for p in first_outcomes if sum(d.event.prediction_id == p for d, _ in ok) == 2]
        assert taken == len(lone)  # each lone outcome of a lone prediction took the stored-join columns
