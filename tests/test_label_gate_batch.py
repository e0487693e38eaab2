"""LabelPolicy.gate (distinct triples decided first, the batch returned as it came when all are kept) against the
event-by-event gate it replaces, on batches with reserved, refused, folded, long and missing labels."""

from __future__ import annotations

import dataclasses

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driftline.config_limits import Limits
from driftline.core.engine import DEFAULT_VARIANT, DEFAULT_VERSION
from driftline.core.events import RAW_LIMIT, Decoded, DeadLetter, Prediction
from driftline.core.labels import Admitted, LabelGate, Refused
from driftline.ingest.labels import LabelPolicy
from driftline.ingest.pipeline import RawRecord

from helpers import decoded, outcome, pred

LONG = "v" * 90
# (" ALL" with its space never reaches the gate: names with surrounding whitespace are refused at decode, name_rule.py)
NAMES = st.sampled_from(["A", "B", "C", "D", "all", "ALL", "__other__", LONG, LONG + "x"])


class FakeStore:
    """Hands each gate a fresh copy of the admitted values, as a new transaction would read them."""

    def __init__(self, admitted: Admitted) -> None:
        self.admitted = admitted

    def admitted_labels(self, conn: object) -> Admitted:
        return Admitted(set(self.admitted.models), {k: set(v) for k, v in self.admitted.values.items()})


def _reference(policy: LabelPolicy, store: FakeStore, ok, raws, dead):
    """The gate as it was: every prediction decided in order, a triple kept as it is decided once."""
    gate = LabelGate(policy.limits, store.admitted_labels(None))
    kept, kept_raws, kept_as_is = [], [], set()
    for (d, shard), raw in zip(ok, raws):
        ev = d.event
        if not isinstance(ev, Prediction):
            kept.append((d, shard))
            kept_raws.append(raw)
            continue
        variant, version = ev.variant or DEFAULT_VARIANT, ev.model_version or DEFAULT_VERSION
        if (ev.model, variant, version) in kept_as_is:
            kept.append((d, shard))
            kept_raws.append(raw)
            continue
        verdict = gate.decide(ev.model, variant, version)
        if verdict == (variant, version):
            kept_as_is.add((ev.model, variant, version))
        if type(verdict) is Refused:
            dead.append(DeadLetter(verdict.reason, verdict.detail, raw.source, raw.partition, raw.offset,
                                   bytes(raw.payload[:RAW_LIMIT])))
            continue
        if verdict != (variant, version):
            d = Decoded(msgspec.structs.replace(ev, variant=verdict[0], model_version=verdict[1]), d.ts)
        kept.append((d, shard))
        kept_raws.append(raw)
    return kept, kept_raws, gate


@st.composite
def batches(draw):
    n = draw(st.integers(0, 40))
    raws = []
    for i in range(n):
        if draw(st.integers(0, 4)) == 0:
            raws.append(outcome(f"id{i}", 1, 1_700_000_000.0 + i))
            continue
        kw = {}
        for field in ("variant", "model_version"):
            v = draw(st.one_of(st.none(), NAMES))
            if v is not None:
                kw[field] = v
        raws.append(msgspec.json.encode({"type": "prediction", "prediction_id": f"id{i}", "score": 0.5,
                                         "ts": 1_700_000_000.0 + i, "model": draw(st.sampled_from(
                                             ["fraud", "churn", "spam", "all", LONG])), **kw}))
    admitted = Admitted()
    for model in draw(st.lists(st.sampled_from(["fraud", "churn"]), max_size=2)):
        admitted.add(model, "model", "")
        for v in draw(st.lists(st.sampled_from(["A", "B"]), max_size=2)):
            admitted.add(model, "variant", v)
    limits = Limits(max_models=draw(st.integers(1, 3)), max_variants_per_model=draw(st.integers(1, 3)),
                    max_versions_per_model=draw(st.integers(1, 3)))
    return raws, admitted, limits


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches(), st.booleans())
def test_gate_equals_the_event_by_event_gate(batch, plain):
    raws, admitted, limits = batch
    if plain:  # the common case: every label already admitted
        raws = [pred(f"p{i}", 0.5, 1_700_000_000.0 + i) for i in range(len(raws))] + [outcome("p0", 1, 1.7e9)]
        admitted = Admitted({"fraud"}, {("fraud", "variant"): {"A"}, ("fraud", "model_version"): {"unknown"}})
    ok = [(d, i % 3) for i, d in enumerate(decoded(raws))]
    records = [RawRecord("file:x", 0, i, r) for i, r in enumerate(raws)]
    policy = LabelPolicy(limits, lambda: 0.0, {"fraud": ["A", "B"]})
    store = FakeStore(admitted)
    dead1: list[DeadLetter] = [DeadLetter("invalid_json", "x", "file:x", 0, -1, b"")]
    dead2 = list(dead1)
    kept1, raws1, gate1 = _reference(policy, store, ok, records, dead1)
    kept2, raws2, gate2 = policy.gate(store, None, ok, records, dead2)  # type: ignore[arg-type]
    assert kept2 == kept1 and raws2 == raws1 and dead2 == dead1
    assert [type(d.event) for d, _ in kept2] == [type(d.event) for d, _ in kept1]
    assert (gate2.new, gate2.overflow, gate2.examples) == (gate1.new, gate1.overflow, gate1.examples)
    assert dataclasses.astuple(gate2.admitted) == dataclasses.astuple(gate1.admitted)
    # a batch kept as it came is handed back as the caller's own lists (the pipeline then reuses the events it
    # listed for the gate); the events may be passed in, listed once, with the same outcome
    assert (kept2 is ok and raws2 is records) == (kept2 == ok)
    dead3 = list(dead1[:1])
    kept3, raws3, gate3 = policy.gate(store, None, ok, records, dead3, [d.event for d, _ in ok])  # type: ignore
    assert kept3 == kept1 and raws3 == raws1 and dead3 == dead1 and gate3.new == gate1.new


# hostile labels for the flags test: lone surrogates, control and invisible characters (refused at decode, kept by
# the gate when handed over decoded), empty and long names, a name repeated under two kinds
HOSTILE = st.sampled_from(["A", "B", "", "\ud800", "a\u200bb", "\x00", "ALL", "__other__", LONG, LONG + "x", "v1"])


@st.composite
def hostile_batches(draw):
    """Decoded events of any type mix (Prediction and its tagged subclass, Outcome and its tagged subclass), with
    duplicate ids, NaN-free odd stamps and hostile labels built directly (no decode refusal in the way)."""
    from driftline.core.events import Outcome, _TaggedOutcome, _TaggedPrediction
    ok = []
    for i in range(draw(st.integers(0, 30))):
        pid = draw(st.sampled_from(["a", "b", "\ud800", f"id{i}"]))
        ts = draw(st.sampled_from([0.0, 1.7e9, 1.7e9 + 0.5, 253402300799.0]))
        kind = draw(st.integers(0, 3))
        if kind < 2:
            cls = (Prediction, _TaggedPrediction)[kind]
            ev = cls(pid, draw(st.sampled_from(["fraud", "churn", "\ud800", LONG])), ts, 0.5,
                     draw(st.one_of(st.none(), HOSTILE)), draw(st.one_of(st.none(), HOSTILE)))
        else:
            ev = (Outcome, _TaggedOutcome)[kind - 2](pid, 1, ts)
        ok.append((Decoded(ev, ts), i % 3))
    return ok


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile_batches(), st.integers(1, 3), st.booleans())
def test_gate_given_the_batch_flags_equals_the_event_by_event_gate(ok, most, with_admitted):
    """The gate reading the prediction flags event_columns listed (the engine reads the same list) decides as the
    event-by-event gate did with its own isinstance tests, on every event type and hostile labels."""
    from driftline.core.batch import event_columns
    admitted = Admitted({"fraud"}, {("fraud", "variant"): {"A"}}) if with_admitted else Admitted()
    limits = Limits(max_models=most, max_variants_per_model=most, max_versions_per_model=most)
    records = [RawRecord("file:x", 0, i, b"{}") for i in range(len(ok))]
    policy = LabelPolicy(limits, lambda: 0.0, {"fraud": ["A"]})
    store = FakeStore(admitted)
    dead1: list[DeadLetter] = []
    dead2: list[DeadLetter] = []
    kept1, raws1, gate1 = _reference(policy, store, ok, records, dead1)
    evs, _, flags = event_columns(ok)
    assert flags == [isinstance(e, Prediction) for e in evs]
    kept2, raws2, gate2 = policy.gate(store, None, ok, records, dead2, evs, flags)  # type: ignore[arg-type]
    assert kept2 == kept1 and raws2 == raws1 and dead2 == dead1
    assert [type(d.event) for d, _ in kept2] == [type(d.event) for d, _ in kept1]
    assert (gate2.new, gate2.overflow, gate2.examples) == (gate1.new, gate1.overflow, gate1.examples)


def test_a_batch_lists_its_prediction_flags_once(tmp_path, monkeypatch):
    """process_batch scans the events' types once: the gate and the engine read the flags event_columns listed
    (each made its own scan before: ~475 instructions an event for both, issue 18 round "decode")."""
    from driftline.config import Config
    from driftline.core import batch
    from driftline.ingest.pipeline import Pipeline
    from driftline.storage.store import Store

    from helpers import outcome, pred
    calls = []
    inner = batch.pred_flags

    def counted(evs):
        calls.append(len(evs))
        return inner(evs)

    monkeypatch.setattr(batch, "pred_flags", counted)
    store = Store(f"sqlite:///{tmp_path / 'f.db'}")
    store.migrate()
    raws = [pred("a", 0.5, 1.7e9), pred("b", 0.4, 1.7e9 + 1), outcome("a", 1, 1.7e9 + 2), pred("a", 0.5, 1.7e9)]
    result = Pipeline(Config(), store, clock=lambda: 1.7e9).process_batch(
        [RawRecord("file:x", 0, i, r) for i, r in enumerate(raws)])
    store.close()
    assert result.accepted == 4 and calls == [4]
