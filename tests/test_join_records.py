"""PredRecord and OutcomeRecord, the join records built once per event, are built in C (msgspec Structs: a
dataclass's Python __init__ cost ~1,700 instructions a record) and keep what the engine and the stores rely on:
positional and keyword construction with the same defaults, in-place updates, field equality, no hash, copies,
pickling, and the key / bucket_key / state helpers."""

from __future__ import annotations

import copy
import pickle
import sys
from typing import Any

import msgspec
import pytest

from driftline.core.engine import OutcomeRecord, PredRecord
from driftline.core.stats import NEG, UNL


def _python_calls(make: Any, *args: Any) -> int:
    """Python-level function calls made while `make(*args)` runs."""
    calls = 0

    def prof(frame: Any, event: str, arg: Any) -> None:
        nonlocal calls
        if event == "call":
            calls += 1
    sys.setprofile(prof)
    try:
        make(*args)
    finally:
        sys.setprofile(None)
    return calls


def test_records_are_built_without_a_python_init() -> None:
    assert _python_calls(PredRecord, "p", "m", "v1", "A", 1.0, 0.5, True, 2) == 0
    assert _python_calls(OutcomeRecord, "p", 1, 2.0, 0, True) == 0


def test_records_behave_as_the_dataclasses_did() -> None:
    rec = PredRecord("p", "m", "v1", "A", 3600.5, 0.25, False)
    assert (rec.shard, rec.label, rec.label_ts, rec.implicit, rec.slice_values) == (0, None, None, False, None)
    assert rec == PredRecord(prediction_id="p", model="m", model_version="v1", variant="A", ts=3600.5, score=0.25,
                             flagged=False, shard=0)
    assert rec.key == ("p", "m", "A") and rec.bucket_key(3600) == ("m", "v1", "A", 3600, 0) and rec.state == UNL
    rec.label, rec.label_ts, rec.implicit = NEG, 4000.0, True
    assert rec.state == NEG and rec != PredRecord("p", "m", "v1", "A", 3600.5, 0.25, False)
    assert repr(OutcomeRecord("p", 1, 2.0)) == "OutcomeRecord(prediction_id='p', label=1, ts=2.0, shard=0, " \
                                               "matched=False)"
    with pytest.raises(TypeError):
        hash(rec)
    with pytest.raises(AttributeError):
        rec.other = 1  # type: ignore[attr-defined]
    sliced = PredRecord("q", "m", "v1", "A", 1.0, 0.5, True, 1, 1, 2.0, False, {"country": "FR"})
    for twin in (copy.deepcopy(sliced), pickle.loads(pickle.dumps(sliced)), msgspec.structs.replace(sliced)):
        assert twin == sliced and twin is not sliced
    deep = copy.deepcopy(sliced)
    deep.slice_values["country"] = "DE"  # type: ignore[index]
    assert sliced.slice_values == {"country": "FR"}
    assert msgspec.structs.astuple(OutcomeRecord("p", 0, 1.5, 3, True)) == ("p", 0, 1.5, 3, True)
