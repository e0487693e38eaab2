"""Multivariate drift on features with huge values (±1.79e308, 2**64): finite results, no warnings, no crash.

Before, a reference holding ±1.79e308 overflowed the encoding's mean and spread: the readout said "window nan vs
reference nan", `drift --json` died with "Out of range float values are not JSON compliant" and numpy printed
overflow warnings. Ordinary data must give the same bits as before (pinned against the old formula).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from driftline.analysis.multivariate import encode, fit_encoding, multivariate_drift

FEATURES = [("a", "numeric"), ("b", "numeric"), ("c", "numeric")]
HUGE = (1.79e308, -1.79e308, float(2**64), 1e300, -1e300)


def _rows(rng: np.random.Generator, n: int, huge_every: int = 0) -> list[dict]:
    rows = []
    for i in range(n):
        a, b = rng.normal(size=2)
        row = {"a": float(a), "b": float(a + 0.3 * b), "c": float(rng.normal())}
        if huge_every and i % huge_every == 0:
            row["c"] = HUGE[(i // huge_every) % len(HUGE)]
        rows.append(row)
    return rows


def _finite_json(result) -> dict:
    doc = result.to_json()
    json.dumps(doc, allow_nan=False)  # the CLI's JSON refuses NaN and inf
    return doc


def test_huge_values_in_the_reference_and_the_window_give_finite_results_without_warnings() -> None:
    rng = np.random.default_rng(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an overflow warning fails the test
        r = multivariate_drift(_rows(rng, 600, huge_every=7), _rows(rng, 300, huge_every=5), FEATURES, 0.01,
                               permutations=199)
    doc = _finite_json(r)
    assert doc["error"] is not None and math.isfinite(doc["error"]) and math.isfinite(doc["reference_error"])
    assert r.columns == ("a", "b", "c")


def test_tiny_and_zero_columns_give_no_warnings() -> None:
    """Subnormal and all-zero columns beside huge ones: nothing overflows while choosing the scaling."""
    rng = np.random.default_rng(9)
    rows = _rows(rng, 400, huge_every=9)
    for i, row in enumerate(rows):
        row["a"] = 5e-324 * (i % 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        enc = fit_encoding(rows, FEATURES + [("z", "numeric")])
        z = encode(rows, enc)
    assert np.isfinite(z).all()


def test_a_window_far_outside_an_ordinary_reference_is_drifted_not_nan() -> None:
    rng = np.random.default_rng(5)
    window = _rows(rng, 300)
    for row in window:
        row["c"] = 1.79e308
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = multivariate_drift(_rows(rng, 600), window, FEATURES, 0.01, permutations=199)
    _finite_json(r)
    assert r.drifted is True and r.ratio is not None and r.ratio > 1e6


def test_a_huge_column_is_standardised_exactly_as_the_same_column_at_ordinary_scale() -> None:
    """Scaling a column by 2**700 (exact in binary floating point) changes no standardised value."""
    rng = np.random.default_rng(8)
    rows = _rows(rng, 400)
    scaled = [{**r, "c": r["c"] * 2.0**700} for r in rows]
    z, zs = encode(rows, fit_encoding(rows, FEATURES)), encode(scaled, fit_encoding(scaled, FEATURES))
    assert np.array_equal(z, zs)


def _old_encode(rows: list[dict], names: list[str]) -> np.ndarray:
    """The encoding before huge columns were scaled (frozen copy, numeric columns, nothing missing)."""
    x = np.asarray([[r[n] for n in names] for r in rows], dtype=np.float64)
    centre, scale = x.mean(axis=0), x.std(axis=0)
    keep = scale > 1e-12
    return (x[:, keep] - centre[keep]) / scale[keep]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(*(st.floats(-1e150, 1e150, allow_nan=False) for _ in range(3))), min_size=2,
                max_size=40))
def test_ordinary_values_give_the_same_bits_as_before(values: list[tuple[float, float, float]]) -> None:
    rows = [{"a": a, "b": b, "c": c} for a, b, c in values]
    assert np.array_equal(encode(rows, fit_encoding(rows, FEATURES)), _old_encode(rows, ["a", "b", "c"]))


def test_drift_json_on_a_database_with_huge_feature_values(tmp_path: Path) -> None:
    """End to end: replay, reference, `drift --json` exits 0 with a finite multivariate readout, no warnings."""
    lines = []
    for i in range(1200):
        day = 20 + i % 6
        lines.append(json.dumps({"type": "prediction", "prediction_id": f"p{i}", "model": "m",
                                 "ts": f"2026-11-{day}T{i % 24:02d}:00:00Z", "score": (i % 97) / 97,
                                 "features": {"big": HUGE[i % len(HUGE)] if i % 3 else float(i % 11),
                                              "x": float(i % 13), "y": float((i * 7) % 17)}}))
    events = tmp_path / "e.jsonl"
    events.write_text("\n".join(lines) + "\n")
    db = f"sqlite:///{tmp_path / 'x.db'}"

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "driftline.cli", "--db", db, *args], capture_output=True,
                              text=True, timeout=120)

    assert cli("replay", str(events)).returncode == 0
    assert cli("reference", "set", "--model", "m", "--from", "2026-11-20", "--to", "2026-11-23").returncode == 0
    done = cli("drift", "--json", "--at", "2026-11-26T00:00:00Z", "--window", "2d")
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr, done.stderr
    mv = json.loads(done.stdout)["multivariate"]
    assert mv["error"] is not None and math.isfinite(mv["error"]) and mv["drifted"] is not None
