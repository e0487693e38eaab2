"""The event contract: valid events decode, every malformed one is a dead letter with a reason."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from driftline.core.decode_many import decode_many
from driftline.core.events import RAW_LIMIT, REASONS, DeadLetter, Decoded, Outcome, Prediction, decode
from driftline.ingest.pipeline import RawRecord

GOOD_PRED = {"type": "prediction", "prediction_id": "tx-1", "model": "fraud", "model_version": "v2",
             "variant": "B", "ts": "2026-11-30T03:10:00Z", "score": 0.83,
             "features": {"amount": 120.5, "country": "FR", "card_present": True, "note": None}}
GOOD_OUT = {"type": "outcome", "prediction_id": "tx-1", "label": 1, "ts": "2026-12-04T10:00:00Z"}
ALL_REASONS = set(REASONS) | {"ts_in_future"}


def dec(obj, kind=None):
    raw = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    return decode(raw, "test", 3, 42, kind)


def test_contract_examples_decode():
    p = dec(GOOD_PRED)
    assert isinstance(p, Decoded) and isinstance(p.event, Prediction)
    assert p.ts == 1796008200.0 and p.event.features["card_present"] is True
    o = dec(GOOD_OUT)
    assert isinstance(o, Decoded) and isinstance(o.event, Outcome) and o.event.label == 1


def test_type_may_be_omitted_when_topic_says():
    body = {k: v for k, v in GOOD_OUT.items() if k != "type"}
    assert isinstance(dec(body, kind="outcome").event, Outcome)
    assert isinstance(dec(body).event, Outcome)  # inferred from `label`
    assert dec(GOOD_PRED, kind="outcome").reason == "unknown_type"


def test_an_untyped_event_with_both_score_and_label_is_refused_not_read_as_one_kind():
    """It was read as a prediction and its label silently dropped (new-user tryout): a prediction and its outcome in
    one record is ambiguous, so it is an `unknown_type` dead letter saying what to do."""
    both = {k: v for k, v in GOOD_PRED.items() if k != "type"} | {"label": 1}
    d = dec(both)
    assert isinstance(d, DeadLetter) and d.reason == "unknown_type"
    assert "both 'score' and 'label'" in d.detail and 'set "type"' in d.detail and "its own event" in d.detail
    # the kind is said: by `type`, or by the source (a Kafka predictions topic): read as that kind, as before
    assert isinstance(dec(both | {"type": "prediction"}).event, Prediction)
    assert isinstance(dec(both, kind="prediction").event, Prediction)
    assert isinstance(dec(both | {"type": "outcome"}).event, Outcome)
    assert isinstance(dec(both, kind="outcome").event, Outcome)
    # a null is no value: a prediction with "label": null is still a prediction
    assert isinstance(dec(both | {"label": None}).event, Prediction)


UNTYPED_PRED = {k: v for k, v in GOOD_PRED.items() if k != "type"}
UNTYPED_OUT = {k: v for k, v in GOOD_OUT.items() if k != "type"}


@pytest.mark.parametrize("body, want", [
    (UNTYPED_OUT | {"score": None}, Outcome),  # was a wrong_type prediction ("Expected `float`, got `null`")
    (UNTYPED_OUT | {"model": "m", "score": None}, Outcome),
    (UNTYPED_PRED | {"label": None}, Prediction),
    (UNTYPED_PRED | {"score": None, "label": None}, "unknown_type"),  # was wrong_type
    (UNTYPED_PRED | {"score": None}, "unknown_type"),  # was wrong_type
    (UNTYPED_OUT | {"label": None}, "unknown_type"),  # was label_invalid
    (UNTYPED_PRED | {"label": 0}, "unknown_type"),
])
def test_kind_inference_treats_a_null_score_and_a_null_label_alike(body, want):
    """Tryout: untyped, `"label": 1, "score": null` was read as a prediction (a wrong_type dead letter) while
    `"score": 0.9, "label": null` was a prediction: a null now counts as absent for inference, for both fields."""
    d = dec(body)
    if isinstance(want, str):
        assert isinstance(d, DeadLetter) and d.reason == want
        assert ("both 'score' and 'label'" in d.detail) == (body.get("score") is not None)
        assert body.get("score") is not None or "null counts as absent" in d.detail
    else:
        assert isinstance(d, Decoded) and isinstance(d.event, want)


@pytest.mark.parametrize("mutate,reason", [
    (lambda e: e.pop("prediction_id"), "missing_field"),
    (lambda e: e.pop("ts"), "missing_field"),
    (lambda e: e.update(score="high"), "wrong_type"),
    (lambda e: e.update(score=1.5), "score_out_of_range"),
    (lambda e: e.update(score=-0.1), "score_out_of_range"),
    (lambda e: e.update(ts="yesterday"), "ts_invalid"),
    (lambda e: e.update(ts=-5), "ts_invalid"),
    (lambda e: e.update(prediction_id=12), "wrong_type"),
    (lambda e: e.update(prediction_id=""), "empty_id"),
    (lambda e: e.update(features={"x": [1, 2]}), "wrong_type"),
    (lambda e: e.update(type="click"), "unknown_type"),
    (lambda e: e.update(prediction_id="x" * 201), "too_long"),
    (lambda e: e.update(variant="v" * 201), "too_long"),
    (lambda e: e.update(model_version="\x00"), "nul_in_text"),
    (lambda e: e.update(features={"c\x00": 1}), "nul_in_text"),
])
def test_bad_predictions_are_dead_lettered_with_reason(mutate, reason):
    e = dict(GOOD_PRED)
    mutate(e)
    d = dec(e)
    assert isinstance(d, DeadLetter) and d.reason == reason
    assert (d.source, d.partition, d.offset) == ("test", 3, 42)


@pytest.mark.parametrize("raw,reason", [
    (b'{"prediction_id":"a","model":"m","ts":1,"score":NaN}', "invalid_json"),
    (b'{"prediction_id":"a","model":"m","ts":1,"score":Infinity}', "invalid_json"),
    (b'{"prediction_id":"a","model":"m","ts":1,"score":1e999}', "score_out_of_range"),
    (b'{"prediction_id":"a","label":2,"ts":1}', "label_invalid"),
    (b'{"prediction_id":"a","label":"yes","ts":1}', "label_invalid"),
    (b'{"prediction_id":"a","label":0.5,"ts":1}', "label_invalid"),
    (b'not json', "invalid_json"),
    (b'[1,2]', "not_an_object"),
    (b'{"hello":1}', "unknown_type"),
])
def test_raw_payloads(raw, reason):
    d = decode(raw, "t", 0, 0)
    assert isinstance(d, DeadLetter) and d.reason == reason, d


@pytest.mark.parametrize("label,sent", [(b"1.0", "1.0"), (b'"yes"', '"yes"'), (b"2", "2"),
                                        (b'"' + b"x" * 60 + b'"', '"' + "x" * 36 + "...")])
def test_a_refused_label_is_said_in_the_contract_s_words(label, sent):
    """SRE tryout: `"label": 1.0` was dead-lettered with msgspec's "Expected `bool | int`, got `float` - at
    `$.label`" alone; the detail now says what a label may be and what was sent, on both decode routes."""
    from driftline.core.decode_many import decode_many
    from driftline.ingest.pipeline import RawRecord

    raw = b'{"type":"outcome","prediction_id":"a","label":' + label + b',"ts":1}'
    (many,) = decode_many([RawRecord("t", 0, 0, raw)])
    for d in (decode(raw, "t", 0, 0), many):
        assert d.reason == "label_invalid"
        assert d.detail.startswith(f"label must be 0, 1, true or false, got {sent} (") and "$.label" in d.detail


@pytest.mark.parametrize("raw", [b"", b"   ", b"\n\t"])
def test_an_empty_message_says_so_on_both_decode_routes(raw):
    """A tombstone or empty Kafka message read "Input data was truncated" (msgspec's words; SRE tryout)."""
    from driftline.core.decode_many import decode_many
    from driftline.ingest.pipeline import RawRecord

    d = decode(raw, "t", 0, 0)
    (m,) = decode_many([RawRecord("t", 0, 0, raw)])
    for letter in (d, m):
        assert isinstance(letter, DeadLetter) and letter.reason == "invalid_json"
        assert letter.detail.startswith("empty message")
    assert decode(b'{"prediction_id":', "t", 0, 0).detail == (
        "Input data was truncated: the JSON ends before its last value is complete (a cut message or line)")


def test_raw_payload_is_truncated():
    raw = json.dumps({**GOOD_PRED, "score": 7, "pad": "x" * 10_000}).encode()
    d = decode(raw, "t", 0, 0)
    assert isinstance(d, DeadLetter) and len(d.raw) == RAW_LIMIT and d.raw == raw[:RAW_LIMIT]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=8)
fields = st.fixed_dictionaries({}, optional={
    "type": st.sampled_from(["prediction", "outcome", "x"]) | json_values,
    "prediction_id": st.text(max_size=4) | json_values, "model": st.text(max_size=3) | json_values,
    "ts": st.sampled_from(["2026-01-01T00:00:00Z", "bad"]) | st.floats() | st.integers() | json_values,
    "score": st.floats() | json_values, "label": st.integers(-1, 2) | json_values,
    "features": st.dictionaries(st.text(max_size=3), json_values, max_size=3) | json_values,
})


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.binary(max_size=200), fields.map(lambda d: json.dumps(d).encode())))
def test_fuzzing_never_raises_and_always_classifies(raw):
    d = decode(raw, "fuzz", 0, 0)
    if isinstance(d, DeadLetter):
        assert d.reason in ALL_REASONS and d.reason not in ("other", "internal_error"), (raw, d)
        assert d.raw == raw[:RAW_LIMIT]
    else:
        ev = d.event
        assert ev.prediction_id
        if isinstance(ev, Prediction):
            assert 0.0 <= ev.score <= 1.0
        else:
            assert int(ev.label) in (0, 1)


def test_epoch_milliseconds_are_refused_with_a_hint():
    """A common integration mistake: the detail says what to send instead."""
    e = dict(GOOD_PRED)
    e["ts"] = 1_767_225_600_000
    d = dec(e)
    assert isinstance(d, DeadLetter) and d.reason == "ts_invalid"
    assert d.detail.startswith("timestamp 1767225600000 looks like epoch milliseconds: send seconds"), d.detail


@pytest.mark.parametrize("ts, shown", [(1_795_176_000_000, "timestamp 1795176000000 looks like epoch milliseconds"),
                                       (1_795_176_000_000.5, "timestamp 1795176000000.5 looks like epoch"),
                                       (-5, "timestamp -5 outside")])
def test_a_refused_epoch_is_shown_as_sent(ts, shown):
    """Tryout: epoch milliseconds sent as the integer 1795176000000 were shown as `1795176000000.0`."""
    for d in (dec({**GOOD_PRED, "ts": ts}),
              decode_many([RawRecord("f", 0, 0, json.dumps({**GOOD_PRED, "ts": ts}).encode())])[0]):
        assert isinstance(d, DeadLetter) and d.reason == "ts_invalid", d
        assert d.detail.startswith(shown), d.detail


@pytest.mark.parametrize("ts, hint", [
    ("2026-11-20T10:00Z", "has no seconds: RFC 3339 requires them, e.g. '2026-11-20T10:00:00Z'"),
    ("2026-11-20 10:00+01:00", "has no seconds: RFC 3339 requires them, e.g. '2026-11-20 10:00:00+01:00'"),
    ("2026-11-20T10", "has no minutes and seconds: RFC 3339 requires them, e.g. '2026-11-20T10:00:00'"),
    ("2026-11-20T10:00:00.Z", None), ("20 Nov 2026", None)])
def test_a_stamp_without_seconds_says_they_are_required(ts, hint):
    """Tryout: `"ts": "2026-11-20T10:00Z"` read only msgspec's "Invalid RFC3339 encoded datetime"; the README's
    hint (seconds are required) is added, the reason stays ts_invalid."""
    for d in (dec({**GOOD_PRED, "ts": ts}),
              decode_many([RawRecord("f", 0, 0, json.dumps({**GOOD_PRED, "ts": ts}).encode())])[0],
              dec({"type": "outcome", "prediction_id": "tx-1", "label": 1, "ts": ts})):
        assert isinstance(d, DeadLetter) and d.reason == "ts_invalid", d
        assert "Invalid RFC3339 encoded datetime - at `$.ts`" in d.detail, d.detail
        # the hint first: `dead-letters` cuts the detail column to the terminal (verify tryout)
        assert d.detail.startswith(f"{ts!r} {hint}" if hint else "Invalid RFC3339"), d.detail


@pytest.mark.parametrize("value, got", [(12345678901234567890123, "got `int`"), (-12345678901234567890123, "got `int`"),
                                        (7, "got `int`"), (1.5, "got `float`")])
def test_wrong_type_detail_names_a_big_integer_an_int(value, got):
    """Tryout: msgspec reads an integer beyond 64 bits as a float, so prediction_id 12345678901234567890123 was
    refused with "Expected `str`, got `float`"."""
    d = dec({**GOOD_PRED, "prediction_id": value})
    assert isinstance(d, DeadLetter) and d.reason == "wrong_type"
    assert d.detail == f"Expected `str`, {got} - at `$.prediction_id`"


@pytest.mark.parametrize("ts, start", [
    (1_795_176_000_000_000, "timestamp 1795176000000000 looks like epoch microseconds: send seconds"),
    (1_795_176_000_000_000_000, "timestamp 1795176000000000000 looks like epoch nanoseconds: send seconds"),
    ("1795176000", "'1795176000' is a number written as text: send epoch seconds as a JSON number (1795176000, "),
    ("1795176000.25", "'1795176000.25' is a number written as text")])
def test_other_epoch_mistakes_say_what_to_send_first(ts, start):
    """Verify tryout: epoch microseconds and a quoted epoch got no hint (msgspec's RFC 3339 words, or only the
    range); the hint comes first, as `dead-letters` cuts the detail; the reason stays ts_invalid."""
    for d in (dec({**GOOD_PRED, "ts": ts}),
              decode_many([RawRecord("f", 0, 0, json.dumps({**GOOD_PRED, "ts": ts}).encode())])[0]):
        assert isinstance(d, DeadLetter) and d.reason == "ts_invalid", d
        assert d.detail.startswith(start), d.detail
