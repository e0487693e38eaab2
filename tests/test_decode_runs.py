"""`decode_many` checks whole runs of clean payloads at once (decode_many._clean_run): a dirty payload hidden in a
long run of clean ones must still get exactly `decode`'s result, and so must every clean one around it."""

from __future__ import annotations

import json
import time
import pytest

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driftline.core.decode_many import RUN, _clean_run, decode_many
from driftline.core.events import Decoded, _tagged_dec, decode
from driftline.core.limits import Limits

from test_decode_many import Rec




def _obj(pairs: list[tuple[str, str]], spaced: bool) -> bytes:
    """A JSON object written from (key, raw JSON value) pairs, so keys may repeat."""
    sep, colon = (", ", ": ") if spaced else (",", ":")
    return ("{" + sep.join(f"{json.dumps(k)}{colon}{v}" for k, v in pairs) + "}").encode()


def _pred_pairs(i: int) -> list[tuple[str, str]]:
    feats = _obj([("amount", str(12.5 + i)), ("country", '"FR"'), ("card_present", "true"), ("hour", str(i % 24)),
                  ("note", "null")], False).decode()
    return [("type", '"prediction"'), ("prediction_id", f'"tx-{i}"'), ("model", '"fraud"'),
            ("model_version", '"v2"'), ("variant", '"B"'), ("ts", '"2026-11-04T00:00:56.743922Z"'),
            ("score", "0.25"), ("features", feats)]


def _out_pairs(i: int) -> list[tuple[str, str]]:
    return [("type", '"outcome"'), ("prediction_id", f'"tx-{i}"'), ("label", str(i % 2)),
            ("ts", '"2026-11-05T10:00:00+01:00"')]


def _clean(i: int, kind: str | None = None) -> bytes:
    """A clean payload: predictions and outcomes mixed, or only those of `kind`; compact or spaced."""
    pred = i % 3 != 0 if kind is None else kind == "prediction"
    return _obj(_pred_pairs(i) if pred else _out_pairs(i), i % 7 == 0)


LONG = "n" * 201
DIGITS_309 = str(10 ** 308)  # in range: a float can hold it
BIG_309 = str(2 * 10 ** 308)  # 309 digits too, past the float range
MUTATIONS: list[tuple[str, str]] = [
    # (key, raw JSON value): "key" replaces (or adds) a top-level field, "+key" adds it again (a duplicate key);
    # "f.name" and "f+name" the same in the features object
    ("+model", '"other"'),
    ("f+amount", "3"),
    ("+prediction_id", '"tx-1"'),
    ("features", "null"),
    ("features", "{}"),
    ("model_version", "null"),
    ("variant", '"A"'),
    ("threshold", "0.5"),
    ("model", '"{{{{[[[[ ]]"'),  # braces and brackets inside strings the event accounts for
    ("f.brace", '"{[{[{[{[{["'),
    ("prediction_id", '"[[[[[[[["'),
    ("pad", '"{{[[ \\" }"'),  # an escaped quote inside a string
    ("pad", '"{[ not nested"'),
    ("model", '"caf\\u00e9"'),
    ("model", '"nul \\u0000"'),
    ("f.nul", '"\\u0000"'),
    ("pad", "[[[[[[1]]]]]]"),
    ("pad", '{"a": {"b": {"c": {"d": {"e": 1}}}}}'),
    ("pad", '{"model": "x", "prediction_id": "y"}'),  # a nested object reusing top-level names
    ("f.big", DIGITS_309),
    ("f.big", BIG_309),
    ("f.big", "-" + BIG_309),
    ("f.big", str(10 ** 400)),
    ("f.huge", "1e400"),
    ("f." + LONG, "1"),
    ("f." + "n" * 200, "1"),
    ("f." + "é" * 150, "1"),  # 300 bytes, 150 characters: allowed
    ("f.long", json.dumps("v" * 1001)),
    ("f.long", json.dumps("v" * 1000)),
    ("f.long", json.dumps("é" * 900, ensure_ascii=False)),
    ("f.long", json.dumps("v" * 41)),
    ("model", json.dumps("m" * 200)),
    ("pad", json.dumps("p" * 2000)),
    ("pad", "1" * 400),
    ("ts", '"2026-11-04T00:00:56"'),  # no offset: UTC, whatever the local zone
    ("ts", '"2026-11-04"'),
    ("ts", "1793750400"),
    ("ts", "1793750400.5"),
    ("ts", "-1"),
    ("ts", '"1969-12-31T23:59:59Z"'),
    ("ts", '"9999-12-31T23:59:59-05:00"'),
    ("ts", '"9999-12-31T23:59:59+05:00"'),
    ("ts", "1e300"),
    ("+ts", '"2026-11-04T00:00:56Z"'),
    ("prediction_id", '""'),
    ("model", '""'),
    ("type", '"outcome"'),
    ("type", '"click"'),
    ("score", "1.5"),
    ("label", "1"),
    ("label", "true"),
    ("label", "2"),
    ("f.many1", "1"), ("f.many2", "2"), ("f.many3", "3"),
    ("pad", '"x"'),
    ("pad", "null"),
]


def _dirty(i: int, edits: list[tuple[str, str]], spaced: bool, drop_type: bool, outcome: bool = False) -> bytes:
    """A prediction (or outcome) with the edits made: replaced, added or repeated fields."""
    pairs = _out_pairs(i) if outcome else _pred_pairs(i)
    feats: list[tuple[str, str]] = [("amount", "1.5"), ("country", '"FR"')]
    for key, value in edits:
        target = feats if key[:2] in ("f.", "f+") else pairs
        name = key[2:] if target is feats else key.lstrip("+")
        if "+" in key[:2] or all(k != name for k, _ in target):
            target.append((name, value))
        else:
            target[:] = [(k, value if k == name else v) for k, v in target]
    pairs = [(k, _obj(feats, spaced).decode() if k == "features" and v.startswith('{"amount"') else v)
             for k, v in pairs]
    if drop_type:
        pairs = [(k, v) for k, v in pairs if k != "type"]
    return _obj(pairs, spaced)


RAW_DIRTY = [b"", b" ", b"\r", b"\xef\xbb\xbf{}", b"{}", b"[]", b"not json", b'{"type":"prediction"}',
             b'{"type":"outcome","prediction_id":"a","label":1,"ts":1,"label":0}', b"{" * 100, b"[" * 100,
             b'{"type":"outcome","prediction_id":"a","label":1,"ts":"2026-01-01T00:00:00Z"}\r',
             b'\t{"type":"outcome","prediction_id":"a","label":true,"ts":"2026-01-01T00:00:00Z"} ']

dirty_payloads = st.one_of(
    st.builds(_dirty, st.integers(0, 10 ** 4), st.lists(st.sampled_from(MUTATIONS), min_size=1, max_size=3),
              st.booleans(), st.booleans(), st.booleans()),
    st.sampled_from(RAW_DIRTY))
limits = st.sampled_from([Limits(), Limits(max_depth=5, max_feature_value_len=40), Limits(max_depth=2),
                          Limits(max_depth=1), Limits(max_features=4), Limits(max_event_bytes=300),
                          Limits(max_feature_value_len=0), Limits(max_feature_value_len=250)])


def _same(records: list[Rec], lim: Limits) -> list:
    got = decode_many(records, lim)
    want = [decode(r.payload, r.source, r.partition, r.offset, r.kind, lim) for r in records]
    assert got == want
    return got


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, RUN + 40), st.lists(st.tuples(st.integers(0, RUN + 40), dirty_payloads), max_size=3),
       st.sampled_from([None, "prediction", "outcome"]), limits)
def test_dirty_payloads_hidden_in_long_clean_runs(n, dirty, kind, lim):
    payloads = [_clean(i, kind) for i in range(n)]
    for at, payload in dirty:
        payloads.insert(min(at, len(payloads)), payload)
    records = [Rec("t", 0, i, p, kind) for i, p in enumerate(payloads)]
    _same(records, lim)


@pytest.mark.slow
def test_each_mutation_alone_in_a_full_run(monkeypatch):
    """Every mutation, in the middle of a full run of clean payloads, under each set of limits; in a local zone
    other than UTC, so a naive timestamp read as local time would differ."""
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        _each_mutation()
    finally:
        monkeypatch.undo()
        time.tzset()


def _each_mutation() -> None:
    all_limits = [Limits(), Limits(max_depth=5, max_feature_value_len=40), Limits(max_depth=1),
                  Limits(max_features=4), Limits(max_event_bytes=300), Limits(max_feature_value_len=250)]
    base = [_clean(i) for i in range(RUN)]
    for edit in MUTATIONS:
        for spaced, outcome in ((False, False), (True, False), (False, True)):
            payloads = list(base)
            payloads[RUN // 2] = _dirty(7, [edit], spaced, False, outcome)
            records = [Rec("t", 0, i, p) for i, p in enumerate(payloads)]
            for lim in all_limits:
                _same(records, lim)


def test_clean_runs_take_the_run_wide_path():
    """The clean payloads of these tests are accepted, by the run-wide check (so the tests above exercise it)."""
    for kind in (None, "prediction", "outcome"):
        records = [Rec("t", 0, i, _clean(i, kind), kind) for i in range(2 * RUN)]
        assert all(type(d) is Decoded for d in _same(records, Limits()))
        joined = b"\n".join(r.payload for r in records[:RUN])
        assert _clean_run(records[:RUN], _tagged_dec.decode_lines(joined), joined, Limits()) is not None
