"""A zero score or threshold is made +0.0 by every decode path (tests/test_negative_zero_score.py) without a Python
`__post_init__` that msgspec called for every prediction it parsed (~960 instructions each, issue 18): decode's
`accept`, decode_many's `_fast` and, for a clean run holding a zero, `_clean_run` call events.positive_zeros."""

from __future__ import annotations

import math

import pytest

from driftline.core.decode_many import RUN, _clean_run, decode_many
from driftline.core.events import Decoded, Prediction, _tagged_dec, decode
from driftline.core.limits import DEFAULT_LIMITS

from test_decode_many import Rec


def _pred(i: int, score: str, threshold: str | None) -> bytes:
    t = "" if threshold is None else f',"threshold":{threshold}'
    return (f'{{"type":"prediction","prediction_id":"p{i}","model":"m","ts":"2026-11-04T00:00:{i % 60:02d}Z",'
            f'"score":{score}{t},"features":{{"a":1.5,"c":"x"}}}}').encode()


def _runs() -> list[list[bytes]]:
    """Clean runs (so `_clean_run` takes them whole): zeros of either sign among the scores, thresholds all given,
    some given, none given; and runs without any zero."""
    scores = ["0.25", "-0.0", "0.0", "0", "-0", "1e-300", "0.5"]
    return [[_pred(i, scores[i % 7], None) for i in range(40)],
            [_pred(i, "0.3", ["0.5", "-0.0", "0.0"][i % 3]) for i in range(40)],
            [_pred(i, "0.3", [None, "-0.0", "0.7"][i % 3]) for i in range(40)],
            [_pred(i, "0.3", [None, "0.7"][i % 2]) for i in range(40)],
            [_pred(i, scores[i % 7], "-0.0" if i == 39 else None) for i in range(RUN + 5)]]


def _positive(x: float | None) -> bool:
    return x is None or x != 0.0 or math.copysign(1.0, x) == 1.0


def test_no_post_init_per_parsed_prediction() -> None:
    assert not hasattr(Prediction, "__post_init__")


@pytest.mark.parametrize("lines", _runs())
def test_clean_runs_give_positive_zeros_as_decode_does(lines: list[bytes]) -> None:
    recs = [Rec("t", 0, i, raw) for i, raw in enumerate(lines)]
    whole = _clean_run(recs[:RUN], _tagged_dec.decode_lines(b"\n".join(lines[:RUN])), b"\n".join(lines[:RUN]),
                       DEFAULT_LIMITS)
    assert whole is not None  # the run path, not the per-payload one
    got = decode_many(recs)
    want = [decode(raw, "t", 0, i) for i, raw in enumerate(lines)]
    assert got == want
    for d in got:
        assert isinstance(d, Decoded) and _positive(d.event.score) and _positive(d.event.threshold)
    for d in whole:
        assert _positive(d.event.score) and _positive(d.event.threshold)
