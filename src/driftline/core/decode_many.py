"""Decode a batch of events at once: msgspec parses runs of payloads in one call; the rare payload that needs more
than the fast path (a refusal, an escape, an untyped event, a bound to check closely) goes through `decode`.

The result is exactly `[decode(...) for each record]`: a payload is taken from the batch parse only under the
conditions on which `decode` itself returns its fast-path result (size and depth within bounds, a typed event of
the record's kind, non-empty id and model, names without surrounding whitespace or control characters, no backslash
so no NUL escape and no possible duplicate key, a valid timestamp, features within bounds);
tests/test_decode_many.py checks the equality on dirty payloads.

A clean run (the common case) is checked whole, by `_clean_run`: C-level maps over its parsed events and counts
over its joined bytes prove the same conditions for every payload at once; a run where the proof does not go
through has each payload checked by `_fast` as before (tests/test_decode_runs.py hides dirty payloads in runs).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from itertools import chain
from operator import attrgetter, countOf
from typing import Any, Protocol

import numpy as np

from .events import (MAX_EPOCH, DeadLetter, Decoded, Prediction, _tagged_dec, _TaggedPrediction, decode,
                     positive_zeros, to_epoch)
from .limits import _FLOAT_DIGITS, DEFAULT_LIMITS, MAX_NAME_LEN, Limits, feature_problem, string_tokens
from .utc_epochs import utc_epochs
from ..name_rule import bad_name, first_bad_name

RUN = 512
"""Payloads parsed per msgspec call: a payload that fails the parse sends only its run to the per-event path."""
_QUOTE, _BRACE, _BRACKET, _NEWLINE = 0x22, 0x7B, 0x5B, 0x0A
_KIND, _TS, _TZINFO = attrgetter("kind"), attrgetter("ts"), attrgetter("tzinfo")
_PAYLOAD = attrgetter("payload")
"""C-level readers for maps; a field of the parsed events read to be tested or counted is read by a comprehension
instead (CPython 3.11 specialises its attribute reads of a Struct: `[ev.variant for ev in preds]` takes ~30 % fewer
instructions than `list(map(attrgetter("variant"), preds))`)."""


class Positioned(Protocol):
    """A raw record: its bytes, where it came from and the type its source declares (None: the payload says)."""

    source: str
    partition: int
    offset: int
    payload: bytes
    kind: str | None


def decode_many(records: Sequence[Positioned], limits: Limits = DEFAULT_LIMITS) -> list[Decoded | DeadLetter]:
    """`decode` of every record, in order, parsing runs of well-formed payloads in one msgspec call each."""
    out: list[Decoded | DeadLetter] = []
    for start in range(0, len(records), RUN):
        run = records[start:start + RUN]
        payloads = list(map(_PAYLOAD, run))
        parsed: list[object] | None = None
        joined = b"\n".join(payloads)
        if np.count_nonzero(np.frombuffer(joined, dtype=np.uint8) == _NEWLINE) == len(payloads) - 1:
            try:
                parsed = _tagged_dec.decode_lines(joined)
            except Exception:  # noqa: BLE001 - a refusal, or a RecursionError on deep nesting: decode() says which
                parsed = None
            if parsed is not None and len(parsed) != len(payloads):  # a blank payload: line numbers shifted
                parsed = None
        if parsed is None:
            out.extend(decode(r.payload, r.source, r.partition, r.offset, r.kind, limits) for r in run)
            continue
        try:
            clean = _clean_run(run, parsed, joined, limits)
        except Exception:  # noqa: BLE001 - the per-payload path below decides, exactly as before
            clean = None
        if clean is not None:
            out.extend(clean)
            continue
        for r, ev in zip(run, parsed):
            d = _fast_or_none(r.payload, r.kind, ev, limits)
            out.append(d if d is not None else decode(r.payload, r.source, r.partition, r.offset, r.kind, limits))
    return out


def _clean_run(run: Sequence[Positioned], parsed: list[object], joined: bytes,
               limits: Limits) -> list[Decoded] | None:
    """`_fast` of every payload of a clean run at once, with C-level maps over the run; None when one payload
    might not be accepted (each then goes through `_fast`).

    Why the run-wide checks are exact, for a run without backslash: every accepted payload holds at least one `{`
    (its object) plus one for a non-null `features` object, and at least two quotes per string the decoded event
    accounts for (`string_tokens`); so when the run's totals equal the sums of those minimums, every payload is at
    its minimum: not deeper than 2, and no string dropped by the decoder (no duplicate key). (Depth past 2 needs an
    unknown field, whose key already breaks the quote count: the brace count is a second guard.) Features past a bound
    need a stretch between two quote characters at least as long as the bound (a long name or value, or 309
    digits), so a run without one skips `feature_problem`."""
    if (b"\\" in joined or limits.max_depth < 2 or len(joined) > limits.max_event_bytes
            or not all([ev.prediction_id for ev in parsed])):
        return None
    n = len(parsed)
    preds = [ev for ev in parsed if type(ev) is _TaggedPrediction]
    sources = set(map(_KIND, run))
    if sources != {None} and sources != {"prediction" if len(preds) == n else "outcome" if not preds else ""}:
        return None
    models = [ev.model for ev in preds]
    versions = [ev.model_version for ev in preds]
    variants = [ev.variant for ev in preds]
    if not all(models) or not _clean_names(models, versions, variants):
        return None
    stamps = list(map(_TS, parsed))
    at = utc_epochs(stamps)
    if at is None:
        if set(map(type, stamps)) != {datetime} or countOf(map(_TZINFO, stamps), None):
            return None  # a number, or no offset: the per-payload path converts it
        at = np.array(list(map(datetime.timestamp, stamps)), dtype=np.float64)
    if not (0.0 <= at.min() and at.max() <= MAX_EPOCH):
        return None
    feats = [ev.features for ev in preds]
    if not all(feats):  # (a truth test each: `None in feats` compares every dict with None)
        feats = [f for f in feats if f is not None]
    text = np.frombuffer(joined, dtype=np.uint8)
    quote = text == _QUOTE
    if feats:
        if max(map(len, feats)) > limits.max_features:
            return None
        bound = min(MAX_NAME_LEN + 1, limits.max_feature_value_len + 1, _FLOAT_DIGITS)
        if _may_have_gap(quote, bound) and any(feature_problem(f, limits, len(joined)) for f in feats if f):
            return None  # (`len(joined)` only lets feature_problem check everything: no payload is longer)
    thresholds = [ev.threshold for ev in preds]
    no_threshold = _nones(thresholds)
    tokens = (4 * n + 5 * len(preds) + 3 * (n - len(preds))  # "type", "ts" and their text values; the fields
              + 2 * (len(preds) - _nones(versions)) + 2 * (len(preds) - _nones(variants))
              + len(preds) - no_threshold
              + len(feats) + sum(map(len, feats))
              + countOf(map(type, chain.from_iterable(map(dict.values, feats))), str))
    brackets = np.count_nonzero(text == _BRACE) + (np.count_nonzero(text == _BRACKET) if b"[" in joined else 0)
    if np.count_nonzero(quote) != 2 * tokens or brackets != n + len(feats):
        return None
    # a zero score or threshold (falsy: the values are floats) is made +0.0, as decode does (events.positive_zeros)
    if not all([ev.score for ev in preds]) or (no_threshold < len(preds) and not all(
            thresholds if not no_threshold else [t for t in thresholds if t is not None])):
        for ev in preds:
            positive_zeros(ev)
    return list(map(Decoded, parsed, at.tolist()))


def _nones(values: list[Any]) -> int:
    """How many of the values are None: `all` first (a truth test each), as `count(None)` compares every string
    with None the long way (~150 instructions each)."""
    return 0 if all(values) else values.count(None)


def _clean_names(models: list[str], versions: list[str | None], variants: list[str | None]) -> bool:
    """Whether `bad_name` passes every name: True at once when the names joined by "/" are printable and hold no
    whitespace (then no name has surrounding whitespace or a refused character, all of which are non-printable);
    otherwise each distinct name is tested (hashing fresh strings into a set costs ~10x the join)."""
    names = (models + (versions if all(versions) else [v for v in versions if v is not None])
             + (variants if all(variants) else [v for v in variants if v is not None]))
    joined = "/".join(names)
    if joined.isprintable() and joined.split(None, 1) == [joined]:
        return True
    distinct = set(names)
    return not any(map(bad_name, distinct))  # each distinct name once: a run holds few


def _may_have_gap(quote: np.ndarray, bound: int) -> bool:
    """False when no stretch of `bound` bytes or more lies between two quote characters (or the ends), given the
    mask of quote bytes. A stretch that long holds a whole aligned block of `(bound + 1) // 2` bytes, so blocks
    without a quote are enough to look for (True may also mean a shorter stretch: the caller then looks closely)."""
    size = max(1, (bound + 1) // 2)
    whole = len(quote) - len(quote) % size
    return len(quote) >= size and not bool(quote[:whole].reshape(-1, size).any(axis=1).all())


def _fast_or_none(raw: bytes, kind: str | None, ev: object, limits: Limits) -> Decoded | None:
    """`_fast`, None when it raises (`decode` then gives the dead letter it always gives)."""
    try:
        return _fast(raw, kind, ev, limits)
    except Exception:  # noqa: BLE001
        return None


def _fast(raw: bytes, kind: str | None, ev: object, limits: Limits) -> Decoded | None:
    """The event as `decode`'s fast path accepts it, or None when `decode` must look at the payload itself (the
    reference for `_clean_run`, and its fallback)."""
    if (len(raw) > limits.max_event_bytes or b"\\" in raw
            or raw.count(b"{") + raw.count(b"[") > limits.max_depth):
        return None
    is_pred = isinstance(ev, Prediction)
    if kind is not None and kind != ("prediction" if is_pred else "outcome"):
        return None
    if not ev.prediction_id or (is_pred and not ev.model):  # type: ignore[attr-defined]
        return None
    if is_pred and first_bad_name(ev.model, ev.model_version, ev.variant) is not None:  # type: ignore[attr-defined]
        return None
    ts = ev.ts  # type: ignore[attr-defined]
    try:
        epoch = ts.timestamp() if type(ts) is datetime and ts.tzinfo is not None else to_epoch(ts)
    except (ValueError, OverflowError, OSError):
        return None
    if not 0.0 <= epoch <= MAX_EPOCH:
        return None
    feats = ev.features if is_pred else None  # type: ignore[attr-defined]
    if feats and feature_problem(feats, limits, len(raw)) is not None:
        return None
    if raw.count(b'"') != 2 * string_tokens(ev, True):
        return None
    if is_pred:
        positive_zeros(ev)  # type: ignore[arg-type]
    return Decoded(ev, epoch)  # type: ignore[arg-type]


__all__ = ["decode_many"]
