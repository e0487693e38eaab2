"""The wire contract: prediction and outcome events as msgspec Structs, and their validation.

Every rejection becomes a DeadLetter with a machine-readable reason code, the source position and
the raw payload (truncated), so nothing crashes and nothing vanishes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Annotated, Literal

import msgspec

from .json_errors import json_error_detail
from .limits import DEFAULT_LIMITS, MAX_NAME_LEN, Limits, duplicate_key, feature_problem, string_tokens, too_deep
from .lines import UTF8_BOM, json_lines  # noqa: F401 - read here by replay and the readouts
from .refusals import classify, label_detail, number_detail, percent_hint, ts_detail
from ..name_rule import first_bad_name

RAW_LIMIT = 4096
"""Bytes of the raw payload kept in a dead letter."""

Name = Annotated[str, msgspec.Meta(max_length=MAX_NAME_LEN)]
FeatureValue = float | int | str | bool | None
Score = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
Timestamp = datetime | float | int


def iso(ts: float) -> str:
    """RFC 3339 UTC timestamp."""
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat().replace("+00:00", "Z")


class Prediction(msgspec.Struct, forbid_unknown_fields=False, gc=False):
    """A model's score for one case; `ts` is the prediction time (event time)."""

    prediction_id: Name
    model: Name
    ts: Timestamp
    score: Score
    model_version: Name | None = None
    variant: Name | None = None
    threshold: Score | None = None
    features: dict[str, FeatureValue] | None = None


def positive_zeros(event: Prediction) -> None:
    """-0.0 (a legal score or threshold: it equals 0.0) becomes 0.0: PostgreSQL would store and show its sign
    ("-0"), SQLite drops it, so the backends would disagree. Every decode path calls it on the predictions it
    accepts (decode's `accept`; decode_many's `_fast`, and `_clean_run` where a run holds a zero): a `__post_init__`
    was a Python call from msgspec for every prediction parsed (~960 instructions each, issue 18)."""
    if event.score == 0.0:
        event.score = 0.0
    if event.threshold == 0.0:
        event.threshold = 0.0


class Outcome(msgspec.Struct, forbid_unknown_fields=False, gc=False):
    """The confirmed truth for a prediction; a later outcome with another label is a correction."""

    prediction_id: Name
    label: Literal[0, 1] | bool
    ts: Timestamp


class _TaggedPrediction(Prediction, tag="prediction", tag_field="type"):
    """Fast path: one parse for events that carry their `type`."""


class _TaggedOutcome(Outcome, tag="outcome", tag_field="type"):
    """Fast path: one parse for events that carry their `type`."""


class _TsProbe(msgspec.Struct, forbid_unknown_fields=False, gc=False):
    """The `ts` field as sent (its JSON text), every other field skipped."""

    ts: msgspec.Raw = msgspec.Raw(b"")


class _Probe(msgspec.Struct, forbid_unknown_fields=False, gc=False):
    type: str | None = None
    score: msgspec.Raw = msgspec.Raw(b"")
    label: msgspec.Raw = msgspec.Raw(b"")


REASONS = (
    "invalid_json", "not_an_object", "unknown_type", "missing_field", "wrong_type",
    "score_out_of_range", "threshold_out_of_range", "label_invalid", "ts_invalid", "empty_id", "too_long",
    "nul_in_text", "too_large", "too_deep", "duplicate_key", "too_many_features", "feature_name_too_long",
    "feature_value_too_long", "feature_out_of_range", "internal_error",
)
"""Every reason `decode` gives (README, Event format)."""
PIPELINE_REASONS = ("ts_in_future", "past_horizon", "store_rejected", "model_limit", "reserved_label", "key_missing",
                    "key_mismatch")
"""Reasons the pipeline adds after decoding: the clock check, the label-horizon check against the watermark, a
record the database refused, the label limits, the Kafka key check (ingest/keys.py)."""
ALL_REASONS = REASONS + PIPELINE_REASONS
"""Every dead-letter reason there is (`dead-letters --reason`, the exporter's series at 0)."""
DEAD_LETTER_REASONS = ALL_REASONS
"""The name the exporter uses: it exports each at 0 from the start, so rate panels show 0, not no data."""


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A rejected event: why, where it came from, and its (truncated) raw bytes."""

    reason: str
    detail: str
    source: str
    partition: int
    offset: int
    raw: bytes


class Decoded(msgspec.Struct, frozen=True, gc=False):
    """An accepted event with its timestamp as epoch seconds (UTC); a Struct: one is built per event."""

    event: Prediction | Outcome
    ts: float


_pred_dec = msgspec.json.Decoder(Prediction)
_out_dec = msgspec.json.Decoder(Outcome)
_probe_dec = msgspec.json.Decoder(_Probe)
_ts_probe_dec = msgspec.json.Decoder(_TsProbe)
_tagged_dec = msgspec.json.Decoder(_TaggedPrediction | _TaggedOutcome)
MAX_EPOCH = 253402300799.0
"""9999-12-31T23:59:59Z: later (or negative) timestamps are rejected as ts_invalid."""


def to_epoch(ts: Timestamp) -> float:
    """Epoch seconds of an RFC 3339 datetime (naive means UTC) or a number of epoch seconds."""
    if isinstance(ts, datetime):
        if ts.tzinfo is None:
            ts = ts.replace(tzinfo=timezone.utc)
        return ts.timestamp()
    if isinstance(ts, bool):
        raise ValueError("boolean timestamp")
    value = float(ts)
    if not math.isfinite(value) or not 0.0 <= value <= MAX_EPOCH:
        shown = ts if isinstance(ts, int) else value  # as sent: 1795176000000 read "1795176000000.0" (tryout)
        for unit, scale in (("milliseconds", 1e3), ("microseconds", 1e6), ("nanoseconds", 1e9)):
            if MAX_EPOCH * scale / 1000 < value <= MAX_EPOCH * scale:  # the hint first: `dead-letters` cuts the
                # detail (verify tryout; microseconds had no hint)
                raise ValueError(f"timestamp {shown!r} looks like epoch {unit}: send seconds (fractions allowed) "
                                 "or RFC 3339 (it is outside 1970..9999 as seconds)")
        raise ValueError(f"timestamp {shown!r} outside 1970..9999")
    return value


DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")
"""A bare calendar date (YYYY-MM-DD): by the one timestamp rule, 00:00:00 UTC of that day."""
TIME_RULE = ("RFC 3339 date-time like 2026-11-30T10:00:00Z (offset optional, none means UTC), a date like "
             "2026-11-30 (00:00 UTC), or epoch seconds")
"""The one rule for every time driftline reads, events' `ts` and the CLI's time options alike (README)."""
_DT = msgspec.json.Decoder(datetime)


def parse_time_text(text: str) -> float:
    """Epoch seconds of a time written as text under TIME_RULE (the CLI's form: a number is epoch seconds);
    ValueError naming the rule otherwise, or when outside 1970..9999."""
    try:
        return to_epoch(float(text))
    except ValueError as err:
        if "outside" in str(err):
            raise
    full = text + "T00:00:00Z" if DATE_ONLY.fullmatch(text) else text
    try:
        dt = _DT.decode(msgspec.json.encode(full))
    except msgspec.ValidationError:
        raise ValueError(f"cannot parse {text!r} as a time: use {TIME_RULE}") from None
    return to_epoch(dt)


def _dated(raw: bytes, kind: str) -> Prediction | Outcome | None:
    """The event when its `ts` is a bare date (read as 00:00 UTC, TIME_RULE), else None (stays ts_invalid).
    Only on the dead-letter path: the decoder's fast datetime parsing stays the common case."""
    sent = bytes(_ts_probe_dec.decode(raw).ts)  # the stamp alone: a number out of range (a 5,000-digit `ts`,
    if sent[:1] != b'"':  # 1e400) failed the whole document's untyped decode, read as another field's wrong_type
        return None
    ts = msgspec.json.decode(sent)
    if not isinstance(ts, str) or not DATE_ONLY.fullmatch(ts):
        return None
    doc = msgspec.json.decode(raw)
    doc["ts"] = ts + "T00:00:00Z"
    return msgspec.convert(doc, Prediction if kind == "prediction" else Outcome)


def decode(raw: bytes, source: str, partition: int, offset: int, kind: str | None = None,
           limits: Limits = DEFAULT_LIMITS) -> Decoded | DeadLetter:
    """Decode one JSON event; `kind` is the topic's type when the topic says which it is. Never raises: an
    unexpected failure is an `internal_error` dead letter naming the exception class."""
    try:
        return _decode(raw, source, partition, offset, kind, limits)
    except Exception as err:  # noqa: BLE001 - no single record may stop a source
        return DeadLetter("internal_error", f"decode: {type(err).__name__}: {err}"[:500], source, partition, offset,
                          bytes(raw[:RAW_LIMIT]))


def _decode(raw: bytes, source: str, partition: int, offset: int, kind: str | None,
            limits: Limits) -> Decoded | DeadLetter:
    def dead(reason: str, detail: str) -> DeadLetter:
        if "got `float`" in detail:
            detail = number_detail(detail, raw)
        if reason == "score_out_of_range":
            detail += percent_hint(raw)
        elif reason == "label_invalid":
            detail = label_detail(detail, raw)
        elif reason == "ts_invalid":
            detail = ts_detail(detail, raw)
        return DeadLetter(reason, detail[:500], source, partition, offset, bytes(raw[:RAW_LIMIT]))

    if len(raw) > limits.max_event_bytes:
        return dead("too_large", f"event larger than limits.max_event_bytes ({limits.max_event_bytes:,} bytes)")
    if not raw.isascii() and not _is_utf8(raw):  # msgspec skips an unknown field's bytes without checking them
        return dead("invalid_json", json_error_detail(raw, "Invalid UTF-8 encoded string"))
    depth = too_deep(raw, limits.max_depth) if raw.count(b"{") + raw.count(b"[") > limits.max_depth else None
    if depth is not None:
        return dead("too_deep", f"nested {depth} levels deep, more than limits.max_depth = {limits.max_depth}")
    typed = [True]
    decoded = _decode_bounded(raw, kind, limits, dead, typed)
    if type(decoded) is Decoded:  # duplicate keys: a cheap exact screen first (see string_tokens)
        if b"\\" not in raw and raw.count(b'"') == 2 * string_tokens(decoded.event, typed[0]):
            return decoded
    elif decoded.reason in ("invalid_json", "not_an_object"):  # type: ignore[union-attr]
        return decoded
    repeated = duplicate_key(raw)
    if repeated is not None:  # an ambiguous event is refused whatever a reading of it would give
        return dead("duplicate_key", f"key {repeated!r} appears more than once: the event is ambiguous")
    return decoded


def _is_utf8(raw: bytes) -> bool:
    """Whether the payload is UTF-8 throughout, ignored fields included (JSON text is UTF-8, RFC 8259)."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _decode_bounded(raw: bytes, kind: str | None, limits: Limits, dead: Callable[[str, str], DeadLetter],
                    typed: list[bool]) -> Decoded | DeadLetter:
    """Decode a payload already within the size and depth bounds, checking the features' bounds; `typed[0]` is
    set to whether the payload carried a `type` field (the tagged fast path always does)."""

    def accept(event: Prediction | Outcome, epoch: float) -> Decoded | DeadLetter:
        feats = None
        if isinstance(event, Prediction):
            positive_zeros(event)
            feats = event.features
        problem = feature_problem(feats, limits, len(raw)) if feats else None
        return Decoded(event, epoch) if problem is None else dead(*problem)

    try:  # fast path: a well-formed event with its type parses once
        fast = _tagged_dec.decode(raw)
    except (msgspec.ValidationError, msgspec.DecodeError):
        pass
    else:
        fast_kind = "prediction" if isinstance(fast, Prediction) else "outcome"
        if (kind is None or kind == fast_kind) and fast.prediction_id and (
                fast_kind == "outcome" or fast.model) and _NUL_ESCAPE not in raw and (  # type: ignore[union-attr]
                fast_kind == "outcome" or first_bad_name(fast.model, fast.model_version,  # type: ignore[union-attr]
                                                         fast.variant) is None):  # type: ignore[union-attr]
            ts = fast.ts
            try:
                if type(ts) is datetime and ts.tzinfo is not None:
                    epoch = ts.timestamp()  # the common case, without to_epoch's checks of other forms
                else:
                    epoch = to_epoch(ts)
            except (ValueError, OverflowError, OSError):
                pass  # the slow path below classifies the error
            else:
                if 0.0 <= epoch <= MAX_EPOCH:
                    return accept(fast, epoch)

    try:
        probe = _probe_dec.decode(raw)
        declared = probe.type
        typed[0] = declared is not None
    except msgspec.ValidationError as err:
        if "Expected `object`" in str(err) and "$." not in str(err):
            try:  # msgspec refuses the top-level type before reading on: `[1,2` (a cut message) is not JSON at all
                msgspec.json.decode(raw)
            except msgspec.DecodeError as bad:
                return dead("invalid_json", json_error_detail(raw, str(bad)))
            return dead("not_an_object", str(err))
        return dead("wrong_type", str(err))
    except msgspec.DecodeError as err:
        if not raw.strip():  # msgspec says "Input data was truncated": an empty message or tombstone has no JSON
            return dead("invalid_json", "empty message: no JSON (an empty or whitespace-only payload, or a tombstone)")
        return dead("invalid_json", json_error_detail(raw, str(err)))
    if declared is not None:
        if declared not in ("prediction", "outcome"):
            return dead("unknown_type", f"type {declared!r} is neither 'prediction' nor 'outcome'")
        if kind is not None and declared != kind:
            return dead("unknown_type", f"type {declared!r} arrived on the {kind} source")
        kind = declared
    if kind is None:
        kind = inferred_kind(_given(probe.score), _given(probe.label))
        if kind is None:
            return dead("unknown_type", AMBIGUOUS_KIND if _given(probe.score) else NO_KIND)
    try:
        event: Prediction | Outcome = (_pred_dec if kind == "prediction" else _out_dec).decode(raw)
    except (msgspec.ValidationError, msgspec.DecodeError) as err:
        try:
            dated = _dated(raw, kind) if classify(err, kind) == "ts_invalid" else None
        except (msgspec.ValidationError, msgspec.DecodeError) as again:  # a date, and another field is wrong
            return dead(classify(again, kind), str(again))
        if dated is None:
            return dead(classify(err, kind), json_error_detail(raw, str(err)) if type(err) is msgspec.DecodeError
                        else str(err))
        event = dated
    if not event.prediction_id:
        return dead("empty_id", "prediction_id is empty")
    if isinstance(event, Prediction) and not event.model:
        return dead("missing_field", "model is empty")
    if _NUL_ESCAPE in raw:
        where = _nul_field(event)
        if where:
            return dead("nul_in_text", f"{where} contains a NUL character (\\u0000): not accepted in event text "
                        "(PostgreSQL cannot store it)")
    if isinstance(event, Prediction):
        bad = first_bad_name(event.model, event.model_version, event.variant)
        if bad is not None:  # " m " would be a model of its own beside "m" (tryout); decode_many checks the same
            return dead("wrong_type", bad)
    try:
        ts = to_epoch(event.ts)
        if not 0.0 <= ts <= MAX_EPOCH:
            raise ValueError(f"timestamp {ts!r} outside 1970..9999")
    except (ValueError, OverflowError, OSError) as err:
        return dead("ts_invalid", str(err))
    return accept(event, ts)


AMBIGUOUS_KIND = ("no 'type' field and both 'score' and 'label' present: a prediction and its outcome in one record "
                  "is ambiguous; set \"type\", or send the outcome as its own event")
"""Why an untyped event with a score and a label is refused: read as either kind, the other field was lost."""
NO_KIND = "no 'type' field and neither 'score' nor 'label' present with a value (null counts as absent)"
"""Why an untyped event with neither a score nor a label (or only nulls) is refused."""


def inferred_kind(score: bool, label: bool) -> str | None:
    """The kind of an untyped event from whether its `score` and its `label` have a value (a null is absent, for
    both alike: `"score": null` beside a label made a would-be outcome a wrong_type prediction, while
    `"label": null` beside a score was a prediction); None when both or neither have one (unknown_type)."""
    if score == label:
        return None
    return "prediction" if score else "outcome"


def _given(raw: msgspec.Raw) -> bool:
    """Whether a probed field is present with a value other than null (a null label is no outcome)."""
    return len(raw) > 0 and bytes(raw).strip() != b"null"


_NUL_ESCAPE = b"\\u0000"
"""A NUL can only reach a decoded string through this escape (raw NUL bytes are invalid JSON)."""


def _nul_field(event: Prediction | Outcome) -> str | None:
    """The first text field of the event (ids, names, feature names and values) holding a NUL, or None."""
    texts: list[tuple[str, str | None]] = [("prediction_id", event.prediction_id)]
    if isinstance(event, Prediction):
        texts += [("model", event.model), ("model_version", event.model_version), ("variant", event.variant)]
        for name, value in (event.features or {}).items():
            texts.append((f"features name {name!r}", name))
            texts.append((f"features.{name}", value if isinstance(value, str) else None))
    return next((field for field, text in texts if text is not None and "\x00" in text), None)


def label_value(outcome: Outcome) -> int:
    """The outcome's label as 0 or 1."""
    return int(outcome.label)
