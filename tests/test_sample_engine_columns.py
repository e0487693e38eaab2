"""The sample recording fed with the engine's feature columns (EngineResult.feature_columns, core/feature_columns.py)
records what it records from the events' own dicts: the same samples, the same bytes, the same errors, on dirty
batches (repeated ids, outcomes, shadow variants, events without features, odd values, names in any order) that
went through the engine's batch path first. Run with CI=true as well (derandomized examples)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driftline.core.batch_columns import SEQ
from driftline.core.engine import EngineSettings, JoinView
from driftline.core.events import Decoded, Outcome, Prediction
from driftline.core.feature_columns import FeatureColumns
from driftline.core.sample import encode_sample
from driftline.core.sample_columns import encoded
from driftline.ingest.isolation import apply_isolating
from driftline.ingest.sampling import batch_columns

from test_feature_fast_paths import DIRTY, STRINGS
from test_sample_columns import ODD, _as_sample, _outcome, frozen_batch_samples

NAMES = ["a", "b", "c", "Z", "aa", ""]
VALUE = st.one_of(DIRTY, st.floats(), st.integers(-2**70, 2**70), STRINGS, ODD, st.just("x" * 300))
"""Any feature value, the rare ones included (a huge int fails a batch on both routes; an odd object the engine)."""


@st.composite
def engine_batches(draw: Any) -> tuple[list[tuple[Decoded, int]], EngineSettings]:
    """A batch whose predictions mostly hold the same names (each dict in its own order), so the engine gives its
    feature columns; with repeated ids, early and late outcomes, shadow variants, versions, shards, several
    buckets, and now and then a prediction without features or with a name fewer."""
    names = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=4))
    typed = {n: draw(st.sampled_from([st.floats(-1e6, 1e6), st.integers(-9, 9), st.booleans(),
                                      st.sampled_from(["FR", "DE", "x" * 70]), VALUE])) for n in names}
    ok = []
    for _ in range(draw(st.integers(1, 40))):
        pid = f"p{draw(st.integers(0, 25))}"
        ts = float(draw(st.integers(0, 5))) * 1800.0 + draw(st.sampled_from([0.0, 1.5, 1799.0]))
        shard = draw(st.integers(0, 1))
        if draw(st.integers(0, 4)) == 0:
            ok.append((Decoded(Outcome(pid, draw(st.integers(0, 1)), ts), ts), shard))
            continue
        order = draw(st.permutations(names))
        feats: dict[str, Any] | None = {n: draw(typed[n]) for n in order}
        rare = draw(st.integers(0, 30))
        if rare == 0:
            feats = None
        elif rare == 1 and feats:
            feats.pop(next(iter(feats)))
        pred = Prediction(pid, "m", ts, draw(st.sampled_from([0.1, 0.5, 0.9])),
                          model_version=draw(st.sampled_from([None, "v2"])),
                          variant=draw(st.sampled_from([None, "B"])), features=feats)
        ok.append((Decoded(pred, ts), shard))
    declared = tuple(draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=2)))
    s = EngineSettings(declared_features=declared, max_features=draw(st.sampled_from([2, 50])))
    return ok, s


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(engine_batches(), st.sampled_from([1, 2, 5, 256]))
def test_samples_from_the_engine_columns_are_the_samples_from_the_dicts(case: Any, k: int) -> None:
    """batch_columns given the engine's columns returns, per bucket, the bytes and rows it returns without them
    (and the frozen row route's), or raises the same error."""
    ok, s = case
    got = _outcome(lambda: apply_isolating(s, ok, JoinView))
    if got[0] == "raised" or got[1][1]:  # an engine failure: record_samples gets no columns then
        return
    columns = got[1][0].feature_columns
    events = [d for d, _ in ok]
    fast = _outcome(lambda: batch_columns(s, events, k, columns))
    plain = _outcome(lambda: batch_columns(s, events, k))
    ref = _outcome(lambda: frozen_batch_samples(s, events, k))
    assert fast[0] == plain[0] == ref[0]
    if ref[0] == "raised":
        assert fast[1] == plain[1] == ref[1]
        return
    assert list(fast[1]) == list(plain[1]) == list(ref[1])
    for key, want in ref[1].items():
        assert encoded(fast[1][key]) == encoded(plain[1][key]) == encode_sample(want)  # the float bits too
        assert _as_sample(fast[1][key]) == want


def test_a_plain_batch_hands_its_columns_on_and_they_are_used() -> None:
    """A batch of predictions with the same names (one a duplicate, one with an early outcome) gives the engine's
    columns, one row per counted prediction numbered by its event; the rows of the events asked for come in the
    order asked, with their buckets' series and starts, and an event without a row (the duplicate, the outcome)
    gives None."""
    feats = [{"a": 1.0, "b": "x"}, {"b": "y", "a": 2}, {"a": None, "b": "z"}, {"a": 4.0, "b": "w"}]
    ok = [(Decoded(Outcome("p2", 1, 10.0), 10.0), 0)]
    ok += [(Decoded(Prediction(f"p{i}", "m", 10.0 + i, 0.5, features=f), 10.0 + i), 0) for i, f in enumerate(feats)]
    ok.append((Decoded(Prediction("p0", "m", 10.0, 0.5, features={"a": 9.0, "b": "dup"}), 10.0), 0))
    result, failed = apply_isolating(EngineSettings(), ok, JoinView)
    cols = result.feature_columns
    assert not failed and isinstance(cols, FeatureColumns)
    assert cols.names == ("a", "b") and cols.seq.tolist() == [SEQ * i for i in range(1, 5)]
    assert cols.rows_at(np.array([4, 1, 3]) * SEQ) == [[4.0, 1.0, None], ["w", "x", "z"]]
    assert cols.rows_at(np.array([5]) * SEQ) is None and cols.rows_at(np.array([0, 1]) * SEQ) is None
    groups, codes = cols.series_buckets(np.array([4, 1]) * SEQ)  # type: ignore[misc]
    assert groups == [("m", "unknown", "default", 0)] and codes.tolist() == [0, 0]
    events = [d for d, _ in ok]
    assert list(map(encoded, batch_columns(EngineSettings(), events, 3, cols).values())) == \
        list(map(encoded, batch_columns(EngineSettings(), events, 3).values()))


def test_the_per_event_engine_hands_on_no_columns() -> None:
    """Outside the batch path (every event's moves numbered 0) the engine gives no columns: rows could not be
    told apart."""
    from driftline.core.engine import Engine

    engine = Engine(EngineSettings(), JoinView())
    for i in range(3):
        engine.apply(Decoded(Prediction(f"p{i}", "m", 1.0, 0.5, features={"a": float(i)}), 1.0))
    assert engine.finish().feature_columns is None


def _dirty_stream(seed: int) -> list[bytes]:
    """JSON lines of a dirty stream: repeated ids (exact and conflicting copies), shadow variants, versions, early,
    late and corrected outcomes, predictions without features or with a name fewer, odd values."""
    import json
    import random

    rnd = random.Random(seed)
    lines = []
    for _ in range(rnd.randint(20, 120)):
        pid = f"p{rnd.randint(0, 40)}"
        ts = 1_700_000_000 + rnd.randint(0, 4) * 1800 + rnd.choice([0, 7, 1799])
        if rnd.random() < 0.3:
            lines.append({"prediction_id": pid, "label": rnd.randint(0, 1), "ts": ts})
            continue
        feats: dict[str, Any] | None = {"amount": rnd.choice([1.5, 2, -0.0, 1e300, None]),
                                        "country": rnd.choice(["FR", "DE", "x" * 80, None]),
                                        "new": rnd.choice([True, False])}
        if rnd.random() < 0.05:
            feats = None
        elif rnd.random() < 0.05:
            del feats["new"]  # type: ignore[arg-type]
        ev = {"prediction_id": pid, "model": "m", "ts": ts, "score": rnd.choice([0.1, 0.7]), "features": feats}
        if rnd.random() < 0.3:
            ev["variant"] = "shadow"
        if rnd.random() < 0.2:
            ev["model_version"] = "v2"
        lines.append(ev)
    return [json.dumps(ev).encode() for ev in lines]


def test_replayed_batches_store_the_samples_the_dict_route_stores(tmp_path: Any, monkeypatch: Any) -> None:
    """Dirty streams replayed in batches (stored joins, duplicates across batches) store the same feature sample
    bytes (and buckets) whether the pipeline hands the engine's columns to the sample recording or not."""
    import sqlite3

    import driftline.ingest.pipeline as pipeline
    from driftline.config import Config
    from driftline.ingest.pipeline import Pipeline, RawRecord
    from driftline.storage.store import Store

    inner = pipeline.record_samples
    used: list[bool] = []

    def tracked(*args: Any) -> None:
        used.append(args[-1] is not None)
        inner(*args)

    def without_columns(*args: Any) -> None:
        inner(*args[:-1], None)

    def stored(route: Any, lines: list[bytes], name: str) -> list[Any]:
        monkeypatch.setattr(pipeline, "record_samples", route)
        store = Store(f"sqlite:///{tmp_path}/{name}.db")
        store.migrate()
        p = Pipeline(Config(), store, clock=lambda: 1_800_000_000.0)
        records = [RawRecord("stdin", 0, i, line) for i, line in enumerate(lines)]
        for lo in range(0, len(records), 25):
            p.process_batch(records[lo:lo + 25])
        store.close()
        con = sqlite3.connect(f"{tmp_path}/{name}.db")
        try:
            return [con.execute(f"SELECT * FROM {t} ORDER BY 1, 2, 3, 4").fetchall()
                    for t in ("feature_samples", "buckets")]
        finally:
            con.close()

    for seed in range(12):
        lines = _dirty_stream(seed)
        assert stored(tracked, lines, f"new{seed}") == stored(without_columns, lines, f"old{seed}")
    assert any(used) and not all(used)  # both routes were taken
