"""Issue 18: a stored prediction row is never rewritten for an outcome; its label in force is its outcome row's.

The first test shows the row as first written while every reader reports the label. The property replays dirty
streams (duplicates, early outcomes, corrections, stale outcomes, shadow variants, outcomes older than their
prediction, implicit negatives and expiry between batches, random batch splits) through the store on SQLite and
checks the label in force of every stored prediction against a reference: one join view kept in memory across all
batches by the per-event engine, whose records hold what the base code stored in predictions.label, label_ts and
implicit (it rewrote every relabelled row).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from driftline.config import from_dict
from driftline.core.engine import Engine, JoinView
from driftline.core.events import decode
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.storage.store import Store

from helpers import outcome, pred

T0 = 1_790_000_000.0
DAY = 86400.0
HORIZON_DAYS, IMPLICIT_DAYS = 6, 2
CONFIG = {"labels": {"policy": "implicit_negative_after", "implicit_negative_after": f"{IMPLICIT_DAYS}d",
                     "horizon": f"{HORIZON_DAYS}d"}}
IN_FORCE = ("SELECT p.prediction_id, p.model, p.variant, COALESCE(o.label, p.label), COALESCE(o.ts, p.label_ts), "
            "CASE WHEN o.prediction_id IS NULL THEN p.implicit ELSE 0 END "
            "FROM predictions p LEFT JOIN outcomes o ON o.prediction_id = p.prediction_id")


def _store(tmp: Path, template: Path | None = None) -> Store:
    """A migrated SQLite store in `tmp`: migrated here, or a copy of `template` (migrated already; migrate() is
    then the check that finds it current)."""
    if template is not None:
        shutil.copyfile(template, tmp / "labels.db")
    store = Store(f"sqlite:///{tmp / 'labels.db'}")
    store.migrate()
    return store


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database migrated once, copied for each property example (migrating anew took ~50 ms of CPU an example,
    ~6 s of the property's 120)."""
    path = tmp_path_factory.mktemp("template") / "labels.db"
    _store(path.parent).close()
    assert not path.with_name("labels.db-wal").exists()  # closed: the one file holds the whole database
    return path


def test_an_outcome_leaves_the_stored_prediction_row_as_written(tmp_path: Path) -> None:
    store = _store(tmp_path)
    try:
        pipe = Pipeline(from_dict(CONFIG), store, clock=lambda: T0 + 400 * DAY)
        pipe.process_batch([RawRecord("file:a", 0, 0, pred("x", 0.9, T0))])
        pipe.process_batch([RawRecord("file:b", 0, 0, outcome("x", 1, T0 + 3600))])
        with store.read() as conn:
            row = conn.execute(text("SELECT label, label_ts, implicit FROM predictions")).one()
            assert tuple(row) == (None, None, 0)  # not rewritten (the base rewrote it to (1, T0 + 3600, 0))
            assert [tuple(r) for r in conn.execute(text(IN_FORCE))] == [("x", "fraud", "A", 1, T0 + 3600, 0)]
            scores, labels = store.join.labelled_scores(conn, "fraud", T0 - DAY, T0 + DAY, [0], None, None, 10)
            assert (scores.tolist(), labels.tolist()) == ([0.9], [1])
            assert store.join.positive_delays(conn, "fraud", T0 - DAY, T0 + DAY, [0], None, 10).tolist() == [3600.0]
            assert store.join.unlabelled_before(conn, T0 + DAY, None) == []
        with store.write() as conn:
            (rec,) = store.load_join(conn, ["x"]).preds["x"]
            (old,), _ = store.joins_before(conn, T0 + DAY, None)
        assert (rec.label, rec.label_ts, rec.implicit) == (old.label, old.label_ts, old.implicit) == (1, T0 + 3600,
                                                                                                    False)
    finally:
        store.close()


@st.composite
def dirty_batches(draw):
    """Events over ~12 days of ids from a small pool (so ids meet again: duplicates, shadow variants, corrections,
    stale outcomes, outcomes before or long after their prediction, outcomes older than it), in random batches."""
    events: list[tuple[float, bytes]] = []
    for _ in range(draw(st.integers(1, 60))):
        pid = f"id{draw(st.integers(0, 12))}"
        ts = T0 + draw(st.integers(0, 12 * 24)) * 3600.0
        if draw(st.booleans()):
            variant = draw(st.sampled_from(["A", "A", "B"]))
            events.append((ts, pred(pid, draw(st.sampled_from([0.1, 0.6, 0.9])), ts, variant=variant)))
        else:  # arriving up to 5 days after its time: it may label a prediction made after it, stored already
            late = draw(st.sampled_from([0, 0, 1, 3, 5])) * DAY
            events.append((ts + late, outcome(pid, draw(st.integers(0, 1)), ts)))
    if draw(st.integers(0, 3)):  # in arrival order, as a live stream: expiry and maturity happen between batches
        events.sort(key=lambda e: e[0])
    raws = [raw for _, raw in events]
    cuts = sorted(draw(st.lists(st.integers(1, max(1, len(raws) - 1)), max_size=10, unique=True)))
    return [raws[a:b] for a, b in zip([0, *cuts], [*cuts, len(raws)]) if raws[a:b]], draw(st.booleans())


def _in_force(store: Store) -> dict[tuple[str, str, str], tuple[object, ...]]:
    with store.read() as conn:
        return {tuple(r[:3]): (r[3], r[4], bool(r[5])) for r in conn.execute(text(IN_FORCE))}


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=dirty_batches())
def test_label_in_force_equals_the_rewritten_rows_of_the_base(tmp_path: Path, template: Path, case) -> None:
    batches, maintain = case
    config = from_dict(CONFIG)
    store = _store(Path(tempfile.mkdtemp(dir=tmp_path)), template)  # one database per example
    try:
        pipe = Pipeline(config, store, clock=lambda: T0 + 400 * DAY)
        ref = JoinView()  # the base's stored join state: every relabelled record rewritten
        for k, batch in enumerate(batches):
            records = [RawRecord(f"file:b{k}", 0, j, raw) for j, raw in enumerate(batch)]
            result = pipe.process_batch(records)
            refused = {d.offset for d in result.letters}
            engine = Engine(pipe.settings, ref)
            for j, raw in enumerate(batch):
                if j not in refused:
                    engine.apply(decode(raw, "file", 0, j))
            if maintain:
                wm = pipe.watermark()
                pipe.maintain()
                if wm is not None:
                    recs = [r for rs in ref.preds.values() for r in rs]
                    Engine(pipe.settings, ref).mature([r for r in recs if r.label is None
                                                       and r.ts < wm - IMPLICIT_DAYS * DAY])
                    cutoff = wm - HORIZON_DAYS * DAY
                    for pid in list(ref.preds):
                        ref.preds[pid] = [r for r in ref.preds[pid] if r.ts >= cutoff]
                    for pid in [p for p, o in ref.outcomes.items() if o.ts < cutoff]:
                        del ref.outcomes[pid]
            want = {r.key: (r.label, r.label_ts, r.implicit) for rs in ref.preds.values() for r in rs}
            assert _in_force(store) == want
        with store.write() as conn:  # the batch lookup and the expiry read report it too
            loaded = store.load_join(conn, list(ref.preds))
            old, _ = store.joins_before(conn, float("inf"), None)
        got = {r.key: (r.label, r.label_ts, r.implicit) for rs in loaded.preds.values() for r in rs}
        assert got == want == {r.key: (r.label, r.label_ts, r.implicit) for r in old}
        assert {r.key: msgspec.structs.astuple(r) for r in old} == {
            r.key: msgspec.structs.astuple(r) for rs in loaded.preds.values() for r in rs}
    finally:
        store.close()
