"""`_bucket_indices` (series looked up once per event, buckets grouped with numpy) against the engine's rule: a
bucket key per event, the engine's index looked up per key and new buckets numbered in order of first sight; every
shard's events in one bucket (BUCKET_SHARD: one row an hour whatever the partition)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from driftline.core.batch_columns import _bucket_indices
from driftline.core.engine import BUCKET_SHARD, Engine, EngineSettings, JoinView, PredRecord

TIMES = st.one_of(st.floats(1.6e9, 1.6e9 + 5 * 86400, allow_nan=False), st.integers(0, 10**6).map(float),
                  st.just(2.0**60), st.integers(1_600_000_000, 1_600_100_000))
EVENTS = st.lists(st.tuples(st.sampled_from(["m", "n"]), st.sampled_from(["v1", "v2"]),
                            st.sampled_from(["A", "B"]), TIMES, st.sampled_from([0, 1, 2])), max_size=60)


def _engine_rule(engine: Engine, events: list[tuple]) -> list[int]:
    """The per-event engine's indexing (Engine._bucket), event by event."""
    return [engine._bucket(PredRecord("p", m, v, a, t, 0.5, False, shard)) for m, v, a, t, shard in events]


@settings(max_examples=300, deadline=None)
@given(EVENTS, EVENTS, st.sampled_from([3600, 86400, 60]))
def test_bucket_indices_equal_the_per_event_rule(known, events, bs):
    """The same index per event and the same engine index (keys, numbers and order), with buckets already
    indexed by earlier events of the batch (`known`)."""
    s = EngineSettings(bucket_s=bs)
    ref, new = Engine(s, JoinView()), Engine(s, JoinView())
    _engine_rule(ref, known)
    _engine_rule(new, known)
    expect = _engine_rule(ref, events)
    cols = [list(c) for c in zip(*events)] if events else [[]] * 5
    got = _bucket_indices(new, *cols[:4])  # no shards: they share their buckets
    assert got.tolist() == expect
    assert list(new._index.items()) == list(ref._index.items())
    assert all(type(k[3]) is int and k[4] == BUCKET_SHARD for k in new._index)
