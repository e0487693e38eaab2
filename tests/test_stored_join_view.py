"""The stored-join path (core/batch_columns.apply_stored) reads its stored predictions and leaves them as loaded:
their rows are not rewritten (the outcome rows carry the label in force) and the view is dropped after the batch,
so setting each record's label was a Python loop over every stored join for nothing (issue 18). The batch's result
stays the per-event engine's."""

from __future__ import annotations

import msgspec

from driftline.core.batch import apply_batch
from driftline.core.engine import Engine, EngineSettings, JoinView, PredRecord

from helpers import decoded, outcome, pred
from test_batch_engine import _per_event, _result_doc

T0 = 1_700_000_000.0


def _view() -> JoinView:
    view = JoinView()
    for i in range(6):
        view.preds[f"s{i}"] = [PredRecord(f"s{i}", "fraud", "v1", "A", T0 + i, 0.1 * i, i % 2 == 0, 0)]
    return view


def test_stored_records_left_as_loaded() -> None:
    s = EngineSettings()
    raws = [pred("n0", 0.4, T0 + 10)] + [outcome(f"s{i}", i % 2, T0 + 20 + i) for i in range(6)]
    ok = [(d, 0) for d in decoded(raws)]
    view = _view()
    loaded = {p: [msgspec.structs.astuple(r) for r in recs] for p, recs in view.preds.items()}
    engine = Engine(s, view)
    apply_batch(engine, ok)
    batched = engine.finish()
    assert {p: [msgspec.structs.astuple(r) for r in recs] for p, recs in view.preds.items()} == loaded
    assert _result_doc(batched) == _result_doc(_per_event(s, _view(), ok))
    assert batched.counters[("events", "outcome")] == 6 and not any(k[0].startswith("s") for k in batched.upserts)
