"""`decode_many` (the batch decode of the pipeline) gives exactly `decode`'s result for every record, in order."""

from __future__ import annotations

import json

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from driftline.core.decode_many import RUN, decode_many
from driftline.core.events import decode
from driftline.core.limits import Limits

from test_events import GOOD_OUT, GOOD_PRED, fields


class Rec(msgspec.Struct):
    source: str
    partition: int
    offset: int
    payload: bytes
    kind: str | None = None


def _good(i: int) -> bytes:
    body = dict(GOOD_PRED if i % 2 == 0 else GOOD_OUT, prediction_id=f"tx-{i}")
    return json.dumps(body).encode()


DIRTY = [b"", b"   ", b"not json", b"[1,2]", b'{"a":1}\n{"b":2}',
         b'{"type":"outcome","prediction_id":"a","label":1,"ts":1,"label":0}',
         *(json.dumps({**GOOD_PRED, **change}).encode() for change in (
             {"model": "m\x00"}, {"ts": 1.7e9}, {"ts": "2026-01-01T00:00:00"}, {"features": {"x" * 300: 1}},
             {"pad": "é"}, {"features": {"n": 10 ** 400}}, {"prediction_id": ""}, {"features": {"a": "v" * 50}},
             {"model": " m "}, {"model": "m "}, {"variant": "B\t"}, {"model_version": " v2"}, {"model": "e\x1b[31m"},
             {"model": "   "}, {"variant": "a\x85b"}, {"model": "\ufeffm"}, {"model": "\u202em"},
             {"variant": "a\u200bb"}, {"model_version": "v\u2028"}, {"model": "a\u2029b"}, {"model": "a\ue000"})),
         b'{"type":"prediction","prediction_id":"a","model":"m\xc2\xa0","ts":"2026-01-01T00:00:00Z","score":0.5}',
         b'{"type":"prediction","prediction_id":"a","model":" m","ts":"2026-01-01T00:00:00Z","score":0.5}',
         b'{"type":"prediction","prediction_id":"a","model":"\xef\xbb\xbfm","ts":"2026-01-01T00:00:00Z","score":0.5}',
         b'{"type":"prediction","prediction_id":"a","model":"m","variant":"\xe2\x80\x8b","ts":"2026-01-01T00:00:00Z",'
         b'"score":0.5}',
         b'{"type":"prediction","prediction_id":"a","model":"m","ts":"2026-01-01T00:00:00Z","score":0.5,'
         b'"x":[[[[[[1]]]]]]}',
         b'{"prediction_id":"a","model":"m","ts":"2026-01-01T00:00:00Z","score":0.5,"label":1}',  # untyped, both
         b'{"prediction_id":"a","model":"m","ts":"2026-01-01T00:00:00Z","score":0.5,"label":null}',
         b'{"prediction_id":"a","model":"m","ts":"2026-01-01T00:00:00Z","label":1,"score":null}',  # null: absent
         b'{"prediction_id":"a","ts":"2026-01-01T00:00:00Z","label":null,"score":null}',
         b'{"type":"prediction","prediction_id":"a","model":"m","ts":"2026-01-01T00:00:00Z","score":0.5,"x":"\xff"}',
         b"[1,2", b"[[[[zzzz", b"[" * 200_000, b'{"a":' * 100_000]


def _same(records, limits=Limits()):
    got = decode_many(records, limits)
    want = [decode(r.payload, r.source, r.partition, r.offset, r.kind, limits) for r in records]
    assert got == want


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 10 ** 6).map(lambda i: _good(i)), st.sampled_from(DIRTY),
                          st.binary(max_size=60), fields.map(lambda d: json.dumps(d).encode())), max_size=40),
       st.lists(st.sampled_from([None, None, "prediction", "outcome"]), min_size=40, max_size=40))
def test_decode_many_equals_decode_per_record(payloads, kinds):
    records = [Rec("t", 1, i, p, kinds[i]) for i, p in enumerate(payloads)]
    _same(records, Limits(max_depth=5, max_feature_value_len=40))
    _same(records)


def test_runs_longer_than_one_call_and_a_bad_record_in_one_run():
    records = [Rec("t", 0, i, _good(i)) for i in range(2 * RUN + 7)]
    records[RUN + 3] = Rec("t", 0, RUN + 3, b"{broken")
    _same(records)
    assert sum(type(d).__name__ == "Decoded" for d in decode_many(records)) == 2 * RUN + 6


def test_each_dirty_payload_among_good_ones_and_under_each_kind():
    """A run that parses whole: each refusal must still come from `decode`'s own checks."""
    for dirty in DIRTY:
        for kind in (None, "prediction", "outcome"):
            records = [Rec("t", 0, i, _good(i), kind) for i in range(6)]
            records.insert(3, Rec("t", 0, 99, dirty, kind))
            _same(records)
            _same(records, Limits(max_depth=5, max_feature_value_len=40))
