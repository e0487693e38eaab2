"""The stored-join group of the batch path (core/batch.py `_group_arrays`), found with numpy masks over the view's
ids, against the per-id loop it replaces; and the stored predictions handed on to `apply_stored`, so the view is
not searched a second time."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driftline.core.batch import _group_arrays, pred_flags, apply_batch, event_columns
from driftline.core.engine import Engine, EngineSettings, JoinView, OutcomeRecord, PredRecord

from helpers import decoded, outcome, pred
from test_batch_engine import _per_event, _result_doc

T0 = 1_700_000_000.0


def _reference_stored(engine: Engine, pids: list[str], is_pred: list[bool]) -> list[int]:
    """The stored joins as the per-id loop found them: the lone outcome of an id with one unlabelled, not implicit
    stored prediction and no stored outcome."""
    firsts: dict[str, int] = {}
    for i, p in enumerate(pids):
        firsts.setdefault(p, i)
    per = np.bincount([firsts[p] for p in pids], minlength=len(pids))
    js = []
    for p, recs in engine.view.preds.items():
        j = firsts.get(p)
        if j is not None and len(recs) == 1 and p not in engine.view.outcomes:
            rec = recs[0]
            if rec.label is None and not rec.implicit:
                js.append(j)
    return sorted(j for j in js if per[j] == 1 and not is_pred[j])


@st.composite
def batches_over_views(draw):
    """A batch of predictions and outcomes over a few ids, and a view holding stored rows (none, one or two, labelled,
    implicit or not) and outcomes for some of them and for ids the batch does not hold."""
    ids = [f"id{i}" for i in range(draw(st.integers(1, 12)))]
    raws = []
    for _ in range(draw(st.integers(1, 30))):
        pid = draw(st.sampled_from(ids))
        if draw(st.booleans()):
            raws.append(outcome(pid, draw(st.integers(0, 1)), T0 + draw(st.integers(0, 9000))))
        else:
            raws.append(pred(pid, draw(st.floats(0, 1)), T0 + draw(st.integers(0, 9000))))
    preds: dict[str, list[PredRecord]] = {}
    outs: dict[str, OutcomeRecord] = {}
    for pid in ids + ["absent1", "absent2"]:
        for variant in draw(st.sampled_from([[], ["A"], ["A"], ["A", "B"]])):
            label = draw(st.sampled_from([None, None, 0, 1]))
            preds.setdefault(pid, []).append(PredRecord(pid, "fraud", "v1", variant, T0, 0.3, False, 0, label=label,
                                                        implicit=label == 0 and draw(st.booleans())))
        if draw(st.integers(0, 3)) == 0:
            outs[pid] = OutcomeRecord(pid, 1, T0 + 5, 0, matched=pid in preds)
    return raws, preds, outs


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches_over_views())
def test_stored_group_equals_the_per_id_loop(case):
    """The stored group (and the records handed on) equal the per-id loop's, on views with every kind of stored
    state, ids the batch does not hold among them."""
    raws, preds, outs = case
    ok = [(d, 0) for d in decoded(raws)]
    evs, pids, _ = event_columns(ok)
    engine = Engine(EngineSettings(), JoinView(preds, outs))
    *_, stored, recs = _group_arrays(engine, pids, pred_flags(evs))
    assert stored.tolist() == _reference_stored(engine, pids, pred_flags(evs))
    assert recs == [preds[pids[j]][0] for j in stored.tolist()] and all(r is preds[r.prediction_id][0] for r in recs)


class _NoLookups(dict):
    """A view's predictions that may be iterated but not searched by id."""

    def __getitem__(self, key):
        raise AssertionError(f"view.preds[{key!r}] looked up")

    def get(self, key, default=None):
        raise AssertionError(f"view.preds.get({key!r}) looked up")


def test_stored_joins_take_their_predictions_from_the_grouping():
    """The stored joins' predictions come from the grouping, which visits each stored id once: the view is not
    searched again by id (a second lookup per outcome was ~0.3 us an event at 20,000-event batches)."""
    s = EngineSettings(slice_features=("country",))
    raws = [outcome("s1", 1, T0 + 50), outcome("s2", 0, T0 + 60), outcome("s3", 1, T0 + 70)]
    ok = [(d, k % 2) for k, d in enumerate(decoded(raws))]

    def view(preds: dict) -> JoinView:
        for pid in ("s1", "s2", "s3"):
            preds[pid] = [PredRecord(pid, "fraud", "v1", "A", T0, 0.7, True, 1, slice_values={"country": "FR"})]
        return JoinView(preds=preds)

    engine = Engine(s, view(_NoLookups()))
    apply_batch(engine, ok)
    assert _result_doc(engine.finish()) == _result_doc(_per_event(s, view({}), ok))


def test_listed_columns_give_the_same_result():
    """apply_batch given the events and ids the pipeline listed equals apply_batch listing them itself."""
    s = EngineSettings()
    raws = [pred("a", 0.2, T0), outcome("a", 1, T0 + 9), outcome("s", 1, T0 + 5), pred("b", 0.9, T0)]
    ok = [(d, 0) for d in decoded(raws)]

    def view() -> JoinView:
        return JoinView(preds={"s": [PredRecord("s", "fraud", "v1", "A", T0, 0.7, True)]})

    results = []
    for columns in (None, event_columns(ok)):
        engine = Engine(s, view())
        apply_batch(engine, ok, columns)
        results.append(_result_doc(engine.finish()))
    assert results[0] == results[1]
