"""A score (or threshold) of -0.0 is legal (it equals 0.0) but PostgreSQL stored and showed it as "-0" while SQLite
stored 0.0 (finding: the same replay gave the backends different predictions rows). Decoding makes it 0.0, on every
decode path, and nothing that compares it (flagged at a 0.0 threshold, the buckets) changes."""

from __future__ import annotations

import math

import pytest
from sqlalchemy import text

from driftline.config import from_dict
from driftline.core.decode_many import decode_many
from driftline.core.events import Decoded, Prediction, decode
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.storage.store import Store

from helpers import outcome, pred

T0 = 1_700_000_000.0


def _positive_zero(x: float | None) -> bool:
    return x == 0.0 and math.copysign(1.0, x) == 1.0


def _events(model: str, zero: float) -> list[bytes]:
    """A prediction scored `zero` at threshold 0.0, one scored 0.3 at threshold `zero`, and their outcomes."""
    return [pred(f"{model}-z", zero, T0, model=model, threshold=0.0),
            pred(f"{model}-t", 0.3, T0 + 60, model=model, threshold=zero),
            outcome(f"{model}-z", 1, T0 + 3600), outcome(f"{model}-t", 0, T0 + 3600)]


@pytest.mark.parametrize("raw", [
    b'{"type":"prediction","prediction_id":"p","model":"m","ts":1700000000,"score":-0.0,"threshold":-0.0}',
    b'{"prediction_id":"p","model":"m","ts":1700000000,"score":-0.0,"threshold":-0}',  # untyped: the slow path
    b'{"type":"prediction","prediction_id":"p","model":"m","ts":"2023-11-14T22:13:20","score":-0e5}',
])
def test_decode_and_decode_many_give_positive_zero(raw):
    class R:
        source, partition, offset, payload, kind = "t", 0, 0, raw, None

    for d in (decode(raw, "t", 0, 0), *decode_many([R()] * 3)):
        assert isinstance(d, Decoded) and isinstance(d.event, Prediction), d
        assert _positive_zero(d.event.score)
        assert d.event.threshold is None or _positive_zero(d.event.threshold)


@pytest.fixture(params=["sqlite", "postgres"])
def store(request, tmp_path):
    url = f"sqlite:///{tmp_path / 'z.db'}" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    s = Store(url, clock=lambda: T0 + 86400)
    s.migrate()
    yield s
    s.close()


def test_stored_score_is_zero_not_minus_zero_on_both_backends(store):
    p = Pipeline(from_dict({}), store, clock=lambda: T0 + 86400)
    raws = _events("neg", -0.0) + _events("pos", 0.0)
    p.process_batch([RawRecord("file:z", 0, i, r) for i, r in enumerate(raws)])
    for i, r in enumerate(_events("one", -0.0)):  # a batch of one: the per-event decode
        p.process_batch([RawRecord("file:one", 0, i, r)])
    with store.read() as conn:
        rows = {pid: (score, bool(flagged)) for pid, score, flagged in
                conn.execute(text("SELECT prediction_id, score, flagged FROM predictions"))}
        buckets = {model: [bytes(d) for _, d in sorted(
            (b, d) for b, d in conn.execute(text("SELECT bucket_start, data FROM buckets WHERE model = :m"),
                                            {"m": model}))] for model in ("neg", "pos", "one")}
    for model in ("neg", "pos", "one"):
        score, flagged = rows[f"{model}-z"]
        assert _positive_zero(score) and flagged, (model, score)  # -0.0 >= 0.0 before too: still flagged
        assert rows[f"{model}-t"] == (0.3, True)
    assert buckets["neg"] == buckets["pos"] == buckets["one"]
