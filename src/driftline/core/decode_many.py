"""Decode a batch of events at once: msgspec parses runs of payloads in one call; the rare payload that needs more
than the fast path (a refusal, an escape, an untyped event, a bound to check closely) goes through `decode`.

The result is exactly `[decode(...) for each record]`: a payload is taken from the batch parse only under the
conditions on which `decode` itself returns its fast-path result (size and depth within bounds, a typed event of
the record's kind, non-empty id and model, no backslash so no NUL escape and no possible duplicate key, a valid
timestamp, features within bounds); tests/test_decode_many.py checks the equality on dirty payloads.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from .events import MAX_EPOCH, DeadLetter, Decoded, Prediction, _tagged_dec, decode, to_epoch
from .limits import DEFAULT_LIMITS, Limits, feature_problem, string_tokens

RUN = 512
"""Payloads parsed per msgspec call: a payload that fails the parse sends only its run to the per-event path."""


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
        payloads = [r.payload for r in run]
        parsed: list[object] | None = None
        joined = b"\n".join(payloads)
        if joined.count(b"\n") == len(payloads) - 1:
            try:
                parsed = _tagged_dec.decode_lines(joined)
            except Exception:  # noqa: BLE001 - a refusal, or a RecursionError on deep nesting: decode() says which
                parsed = None
            if parsed is not None and len(parsed) != len(payloads):  # a blank payload: line numbers shifted
                parsed = None
        if parsed is None:
            out.extend(decode(r.payload, r.source, r.partition, r.offset, r.kind, limits) for r in run)
            continue
        for r, ev in zip(run, parsed):
            try:
                d = _fast(r.payload, r.kind, ev, limits)
            except Exception:  # noqa: BLE001 - decode() below turns it into the same dead letter it always gives
                d = None
            out.append(d if d is not None else decode(r.payload, r.source, r.partition, r.offset, r.kind, limits))
    return out


def _fast(raw: bytes, kind: str | None, ev: object, limits: Limits) -> Decoded | None:
    """The event as `decode`'s fast path accepts it, or None when `decode` must look at the payload itself."""
    if (len(raw) > limits.max_event_bytes or b"\\" in raw
            or raw.count(b"{") + raw.count(b"[") > limits.max_depth):
        return None
    is_pred = isinstance(ev, Prediction)
    if kind is not None and kind != ("prediction" if is_pred else "outcome"):
        return None
    if not ev.prediction_id or (is_pred and not ev.model):  # type: ignore[attr-defined]
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
    return Decoded(ev, epoch)  # type: ignore[arg-type]


__all__ = ["decode_many"]
