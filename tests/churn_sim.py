"""A small `churn` stream for the "other models are first-class" tests (issue 17 part 2): three variants
(control/treatment/holdout), month-long label delays (20–40 days) and feature names unlike the fraud example."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from driftline.core.events import iso

DAY = 86400.0
VARIANTS = ("control", "treatment", "holdout")


def churn_lines(t0: float, days: int = 60, per_day: int = 120, seed: int = 3, model: str = "churn",
                variants: tuple[str, ...] = VARIANTS) -> list[bytes]:
    """Predictions over `days` from t0 and their outcomes 20–40 days later (only those before the stream's end)."""
    rng = np.random.default_rng(seed)
    end = t0 + days * DAY
    out: list[tuple[float, bytes]] = []
    for i in range(days * per_day):
        ts = t0 + rng.random() * days * DAY
        y = int(rng.random() < 0.15)
        score = float(1 / (1 + np.exp(-(rng.normal(1.0 if y else -1.5, 1.0)))))
        pid = f"c{i}"
        ev = {"type": "prediction", "prediction_id": pid, "model": model, "variant": variants[i % len(variants)],
              "model_version": "m1", "ts": iso(ts), "score": score,
              "features": {"tenure_months": int(rng.integers(1, 72)), "plan": ["basic", "plus", "pro"][i % 3],
                           "monthly_spend": round(float(rng.gamma(2.0, 20.0)), 2)}}
        out.append((ts, json.dumps(ev).encode()))
        label_ts = ts + rng.uniform(20, 40) * DAY
        if label_ts < end:
            out.append((label_ts, json.dumps({"type": "outcome", "prediction_id": pid, "label": y,
                                              "ts": iso(label_ts)}).encode()))
    out.sort(key=lambda x: x[0])
    return [line for _, line in out]


def write_churn(path: Path, t0: float, **kw: object) -> Path:
    """The churn stream as a JSON-lines file at `path`."""
    path.write_bytes(b"\n".join(churn_lines(t0, **kw)) + b"\n")  # type: ignore[arg-type]
    return path
