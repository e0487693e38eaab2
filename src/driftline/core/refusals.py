"""How a refused event's dead letter reads: its reason, from the decoder's error (classify), and the wording of
its detail (number_detail, percent_hint, label_detail, ts_detail)."""

from __future__ import annotations

import re

import msgspec


def classify(err: Exception, kind: str) -> str:
    msg = str(err)
    if isinstance(err, msgspec.DecodeError) and not isinstance(err, msgspec.ValidationError):
        return "invalid_json"
    if "missing required field" in msg:
        return "missing_field"
    if "of length <=" in msg:
        return "too_long"
    out_of_range = "<=" in msg or ">=" in msg or "out of range" in msg
    if "$.score" in msg:
        return "score_out_of_range" if out_of_range else "wrong_type"
    if "$.threshold" in msg:
        return "threshold_out_of_range" if out_of_range else "wrong_type"
    if "$.features" in msg and "out of range" in msg:
        return "feature_out_of_range"
    if "$.label" in msg:
        return "label_invalid"
    if "$.ts" in msg:
        return "ts_invalid"
    if "Expected `object`" in msg and "$." not in msg:
        return "not_an_object"
    return "wrong_type"  # any other refusal of the decoder: a value of the wrong type or shape for its field


_GOT_FLOAT = re.compile(r"got `float` - at `\$\.(\w+)`$")


def percent_hint(raw: bytes) -> str:
    """' (a percentage? scores are probabilities in [0, 1]: send 0.732)' for a score above 1 and at most 100, else ''
    (churn tryout: a churn model sending 73.2 for 73.2 % read only "Expected `float` <= 1.0 - at `$.score`")."""
    try:
        score = msgspec.json.decode(raw).get("score")
    except (msgspec.DecodeError, AttributeError):
        return ""
    if type(score) not in (int, float) or not 1 < score <= 100:
        return ""
    return f" (a percentage? scores are probabilities in [0, 1]: send {score / 100:.10g})"


def label_detail(msg: str, raw: bytes) -> str:
    """A refused label said in the event contract's words, the value as sent first (SRE tryout: `"label": 1.0` read
    only "Expected `bool | int`, got `float` - at `$.label`"), the decoder's own words after it."""
    try:
        value = msgspec.json.decode(raw).get("label")
    except (msgspec.DecodeError, AttributeError):
        return msg
    sent = msgspec.json.encode(value).decode()
    sent = sent if len(sent) <= 40 else sent[:37] + "..."
    return f"label must be 0, 1, true or false, got {sent} ({msg})"


_NO_SECONDS = re.compile(r"(\d{4}-\d{2}-\d{2}[Tt ]\d{2})(:\d{2})?([Zz]|[+-]\d{2}:\d{2})?")
"""A date-time that stops at the hour or the minute: RFC 3339 requires the seconds."""


_EPOCH_TEXT = re.compile(r"-?\d+(\.\d+)?([eE][+-]?\d+)?")
"""A stamp that is a number in quotes."""


def ts_detail(msg: str, raw: bytes) -> str:
    """msgspec's "Invalid RFC3339 encoded datetime" after the README's hint when the stamp has no seconds (tryout:
    `"ts": "2026-11-20T10:00Z"` read only msgspec's words): "'2026-11-20T10:00Z' has no seconds: RFC 3339 requires
    them, e.g. '2026-11-20T10:00:00Z' (msg)", the hint first so that `dead-letters`' cut detail column shows it
    (verify tryout); `msg` as it is otherwise."""
    if "RFC3339" not in msg:
        return msg
    try:
        ts = msgspec.json.decode(raw).get("ts")
    except (msgspec.DecodeError, AttributeError):
        return msg
    if isinstance(ts, str) and _EPOCH_TEXT.fullmatch(ts.strip()):  # verify tryout: "1795176000" read msgspec's only
        return (f"{ts!r} is a number written as text: send epoch seconds as a JSON number ({ts.strip()}, no quotes) "
                f"or an RFC 3339 stamp ({msg})")
    m = _NO_SECONDS.fullmatch(ts) if isinstance(ts, str) else None
    if m is None:
        return msg
    fixed = f"{m.group(1)}{m.group(2) or ':00'}:00{m.group(3) or ''}"
    missing = "seconds" if m.group(2) else "minutes and seconds"
    return f"{ts!r} has no {missing}: RFC 3339 requires them, e.g. {fixed!r} ({msg})"


def number_detail(msg: str, raw: bytes) -> str:
    """msgspec's refusal with its "got `float`" said truthfully: msgspec reads an integer beyond 64 bits as a
    float (tryout: prediction_id 12345678901234567890123 was reported as "got `float`"), so an integer literal at a
    top-level field is `int`, and a value whose literal cannot be found is "a number"."""
    m = _GOT_FLOAT.search(msg)
    if m is None:
        return msg.replace("got `float`", "got a number")
    lit = re.search(rb'"' + m.group(1).encode() + rb'"\s*:\s*(-?[0-9][0-9.eE+-]*)', raw)
    if lit is None:
        return msg.replace("got `float`", "got a number")
    return msg.replace("got `float`", "got `int`") if lit.group(1).lstrip(b"-").isdigit() else msg
