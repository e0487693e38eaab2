"""Pipeline's column-at-a-time split of a batch (`_split_plain`) against the record-by-record split it shortcuts:
the same accepted events, shards, dead letters, indices and positions on dirty batches (Kafka batches keyed by
their prediction_ids included), and no shortcut at all for batches with events past the horizon, a mix of keyed and
keyless records, or an accepted event whose key is missing or another than its prediction_id."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driftline.config import Config
from driftline.core.decode_many import decode_many
from driftline.ingest.keys import key_problem
from driftline.ingest.pipeline import Pipeline, RawRecord, _split_plain

from helpers import outcome, pred

T0 = 1_700_000_000.0
PAYLOADS = st.sampled_from([pred("a", 0.5, T0), pred("b", 0.2, T0 + 5), outcome("a", 1, T0 + 9), b"{", b"[]",
                            pred("f", 0.5, T0 + 3 * 86400), b'{"type": "prediction"}', outcome("", 1, T0),
                            pred("é€", 0.7, T0 + 1), outcome("é€", 0, T0 + 2), pred("b\x00", 0.1, T0),
                            b'{"type":"prediction","prediction_id":"\\ud800","model":"fraud","ts":1.0,"score":0.5}'])


def _own_key(payload: bytes) -> bytes | None:
    """The UTF-8 prediction_id of a payload that has one (the key a Kafka producer keys it by), else None."""
    try:
        pid = json.loads(payload).get("prediction_id")
        return pid.encode() if isinstance(pid, str) else None
    except (ValueError, AttributeError, UnicodeEncodeError):
        return None


@st.composite
def batches(draw):
    n = draw(st.integers(0, 30))
    sources = draw(st.lists(st.sampled_from(["file:a", "file:b", "stdin", "kafka:p", "kafka:o"]), min_size=1,
                            max_size=2))
    keyed = draw(st.sampled_from(["none", "mixed", "own", "own"]))  # own: Kafka records keyed by prediction_id
    records = []
    for i in range(n):
        payload = draw(PAYLOADS)
        if keyed == "own" and draw(st.integers(0, 20)):  # mostly their own key (b"" when they have none)
            key: bytes | None = _own_key(payload) or b""
        elif keyed != "none":
            key = draw(st.sampled_from([None, b"", b"a", b"b", bytearray(b"a"), _own_key(payload) or b"x"]))  # type: ignore
        else:
            key = None
        records.append(RawRecord(draw(st.sampled_from(sources)), draw(st.integers(0, 1)),
                                 draw(st.integers(-2, 40)), payload, key=key))
    return records


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches(), st.sampled_from([T0 + 86400 + 10, T0 + 10 * 86400]), st.booleans(),
       st.sampled_from(["dead_letter", "accept"]))
def test_split_plain_equals_the_record_by_record_split(records, horizon, by_shard, policy):
    pipeline = Pipeline(Config(), None)  # type: ignore[arg-type]  # the split never touches the store
    pipeline.key_policy = policy
    decoded = decode_many(records)
    shard_of = (lambda r: r.offset % 3) if by_shard else None
    ref = pipeline._split(records, decoded, horizon, shard_of)
    fast = _split_plain(records, decoded, horizon, shard_of)
    keys = [r.key for r in records]
    mixed = None in keys and keys.count(None) != len(keys)
    future = any(getattr(d, "ts", 0.0) > horizon for d in decoded)
    wrong_key = any(hasattr(d, "event") and k is not None and key_problem(k, d.event.prediction_id)  # type: ignore
                    for k, d in zip(keys, decoded))
    if mixed or future or wrong_key:
        assert fast is None
        return
    assert fast is not None
    ok, ok_raw, ok_at, dead, dead_at, positions, problems = fast
    assert (ok, ok_raw, list(ok_at), dead, dead_at, problems) == \
        (ref[0], ref[1], list(ref[2]), ref[3], ref[4], ref[6])
    assert list(positions.items()) == list(ref[5].items())  # same positions, same order
