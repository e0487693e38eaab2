"""Bounds on what one event may hold, and the cheap checks that enforce them before and after decoding.

Every value that comes from events has a bound (size, nesting, duplicate keys, feature count, name and value
lengths); an event past one is a dead letter with a specific reason, never a crash or a silent reinterpretation.
Pure functions: no IO, no clock.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from operator import countOf
from typing import Any

import numpy as np

MAX_NAME_LEN = 200
"""Longest prediction id, model, model version, variant or feature name: the join and bucket keys are VARCHAR(200)."""
UNDECLARED_COUNTER = "features_undeclared"
"""Counter name whose labels are feature names seen in events but not declared under `features:` (value: how
many occurrences were refused), so `drift` and the report can name them."""
MAX_UNDECLARED_NAMES = 50
"""At most this many undeclared names are recorded by name (hostile input cannot grow the counters table without
bound); beyond them only the total `features_untracked{reason="undeclared"}` grows."""
OVER_LIMIT_COUNTER = "features_over_limit"
"""Counter name whose labels are feature names refused in a bucket that already tracked `max_features` names (value:
occurrences refused), so `replay` and `drift` can say how many and name them (tryout: 851 of 901 features dropped
out of monitoring without a word)."""
MAX_OVER_LIMIT_NAMES = 1000
"""At most this many over-limit names are recorded by name (limits.max_features' default: every name one event may
carry); beyond them only the total `features_untracked{reason="over_limit"}` grows, and readers say "at least"."""
NAMED_COUNTERS = {UNDECLARED_COUNTER: MAX_UNDECLARED_NAMES, OVER_LIMIT_COUNTER: MAX_OVER_LIMIT_NAMES}
"""Counters recording feature names as labels → how many names each keeps (per batch and in the store)."""
MAX_FUTURE_S = 86400.0
"""Events stamped more than this ahead of the clock are refused (ts_in_future): by replay and run, and by a
reference built from a file (one stamped 9999-12-31 made every later `reference list` and `drift` fail)."""
FLOAT_MAX = 1.7976931348623157e308
"""A numeric feature must be representable as a float (the fine histograms bin float64 values)."""


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-event bounds (config section `limits`)."""

    max_event_bytes: int = 1 << 20
    """A line or Kafka message longer than this is a `too_large` dead letter (and is never held whole in memory)."""
    max_depth: int = 64
    """Objects and arrays nested deeper than this are a `too_deep` dead letter (the decoder recurses per level)."""
    max_features: int = 1000
    """More features in one event are a `too_many_features` dead letter."""
    max_feature_value_len: int = 1000
    """A string feature value longer than this (characters) is a `feature_value_too_long` dead letter."""


DEFAULT_LIMITS = Limits()

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
_OPEN, _CLOSE = frozenset(b"[{"), frozenset(b"]}")


def too_deep(raw: bytes, max_depth: int) -> int | None:
    """The nesting depth of the JSON in `raw` when it exceeds `max_depth`, else None. Counting brackets is enough
    on the common path (fewer brackets than the bound cannot nest past it); otherwise strings are blanked out and
    the running depth is computed with numpy, so a hostile 1 MiB line costs milliseconds, not a recursion."""
    if raw.count(b"[") + raw.count(b"{") <= max_depth:
        return None
    bare = np.frombuffer(_STRING.sub(b"", raw), dtype=np.uint8)
    steps = (((bare == 0x5B) | (bare == 0x7B)).astype(np.int32) - ((bare == 0x5D) | (bare == 0x7D)))
    deepest = int(np.cumsum(steps).max()) if len(steps) else 0
    return deepest if deepest > max_depth else None


_PLAIN_TOKEN = re.compile(rb'"([^"]*)"(\s*:)?')
_ESCAPED_TOKEN = re.compile(rb'"((?:[^"\\]|\\.)*)"(\s*:)?', re.S)


def duplicate_key(raw: bytes) -> str | None:
    """A key repeated in the event object or in its `features` object (msgspec would keep the last silently), or
    None. Screen: every string token of the line in order (exact tokenisation), keys are those followed by `:`;
    no key repeated anywhere (and none escaped) proves there is no duplicate. Only otherwise — a feature named
    like a top-level field, nested unknown objects, escaped keys — is the line parsed again to look per object."""
    pattern = _ESCAPED_TOKEN if b"\\" in raw else _PLAIN_TOKEN
    keys = [k for k, colon in pattern.findall(raw) if colon]
    if len(set(keys)) == len(keys) and not any(b"\\" in k for k in keys):
        return None
    return _exact_duplicate(raw)


def _exact_duplicate(raw: bytes) -> str | None:
    """The first key repeated in the top-level object or its `features` object, parsing with the standard library
    (which sees every key/value pair); None when there is none or the line is not valid JSON (the decoder then
    says why)."""
    repeated: dict[int, str] = {}

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        obj: dict[str, Any] = {}
        for key, value in items:
            if key in obj and id(obj) not in repeated:
                repeated[id(obj)] = key
            obj[key] = value
        return obj

    try:
        top = json.loads(raw, object_pairs_hook=pairs)
    except (ValueError, RecursionError):
        return None
    if not isinstance(top, dict):
        return None
    if id(top) in repeated:
        return repeated[id(top)]
    feats = top.get("features")
    if isinstance(feats, dict) and id(feats) in repeated:
        return f"features.{repeated[id(feats)]}"
    return None


def feature_problem(features: dict[str, Any], limits: Limits, raw_len: int) -> tuple[str, str] | None:
    """(reason, detail) when a decoded features object breaks a bound, else None: too many features, a name longer
    than MAX_NAME_LEN, a string value longer than `limits.max_feature_value_len`, a number outside the float range.
    `raw_len` (the event's size) skips the checks that a payload that short cannot fail."""
    if len(features) > limits.max_features:
        return "too_many_features", (f"{len(features)} features, more than limits.max_features = "
                                     f"{limits.max_features}")
    if raw_len > MAX_NAME_LEN and max(map(len, features)) > MAX_NAME_LEN:
        name = next(n for n in features if len(n) > MAX_NAME_LEN)
        return "feature_name_too_long", f"feature name {name[:60]!r}… has {len(name)} characters (> {MAX_NAME_LEN})"
    cap = limits.max_feature_value_len
    if raw_len <= min(cap, _FLOAT_DIGITS):
        return None
    for name, value in features.items():
        kind = type(value)
        if kind is str:
            if len(value) > cap:
                return "feature_value_too_long", (f"features.{name}: {len(value)} characters, more than "
                                                  f"limits.max_feature_value_len = {cap}")
        elif kind is int and not -FLOAT_MAX <= value <= FLOAT_MAX:
            return "feature_out_of_range", f"features.{name}: an integer of {value.bit_length()} bits is not a float"
    return None


_FLOAT_DIGITS = 309
"""An integer past the float range has at least this many digits."""


def string_tokens(event: Any, typed: bool) -> int:
    """How many JSON strings the decoded event accounts for (keys and string values): `typed` when the payload
    carried `type`. A payload without backslashes holding exactly twice as many quote characters has no key
    that the decoder dropped, so no duplicate key (every repeated key is one more string)."""
    n = 2 if typed else 0  # "type" and its value
    features = None
    if hasattr(event, "score"):
        n += 5  # prediction_id and model (key + value each), score (key)
        n += (event.model_version is not None) * 2 + (event.variant is not None) * 2 + (event.threshold is not None)
        features = event.features
    else:
        n += 3  # prediction_id (key + value), label (key)
    n += 2 if type(event.ts) is not int and type(event.ts) is not float else 1
    if features is not None:
        n += 1 + len(features) + countOf(map(type, features.values()), str)
    return n
