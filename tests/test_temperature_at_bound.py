"""A temperature pinned at the edge of the range searched is said to be one, in the terminal and the report."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from scipy.special import expit, logit

from driftline.cli import main

sys.path.insert(0, str(Path(__file__).parent))
from helpers import outcome, pred, replayed_db  # noqa: E402

T0 = 1_764_547_200.0  # 2025-12-01 00:00 UTC
ROWS = [(0.5, 1), (0.5, 0), (0.0, 1), (1.0, 0), (1.0, 1), (0.0, 0), (0.4999999, 1), (0.75, 1), (0.25, 0), (0.5, 0)]


def _loss(tau: float) -> float:
    """Log loss after temperature scaling, on the raw scores (clipped at machine epsilon, as sklearn)."""
    s, y = np.array([r[0] for r in ROWS]), np.array([r[1] for r in ROWS])
    eps = np.finfo(float).eps
    p = expit(logit(np.clip(s, eps, 1 - eps)) / tau)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log1p(-p)))


def test_temperature_at_the_search_bound_is_named(tmp_path: Path, capsys, monkeypatch) -> None:
    """Confident wrong scores of 0 and 1: the best τ lies beyond 20 (the loss still falls there), and
    `calibration` printed 'temperature τ = 20.000' as if fitted; JSON at_bound was true but never shown."""
    assert _loss(40.0) < _loss(20.0)  # reference: the optimum is past the bound
    lines = []
    for i, (s, y) in enumerate(ROWS):
        lines += [pred(f"p{i}", s, T0 + i * 600), outcome(f"p{i}", y, T0 + 86400)]
    url = replayed_db(tmp_path, lines, capsys)
    assert main(["--db", url, "calibration", "--json"]) == 0
    tau = json.loads(capsys.readouterr().out)["calibration"]["temperature"]
    assert tau["at_bound"] is True and abs(tau["tau"] - 20.0) < 1e-3
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["--db", url, "calibration"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "temperature τ = 20.000" in out and "at the edge of the range searched (0.05 to 20)" in out
