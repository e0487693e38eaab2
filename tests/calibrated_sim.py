"""The demo's simulated stream (ingest.simulate, seed 7) as per-day, per-variant labelled fine score
histograms, built directly from the events (no store): the ground truth for label-free estimates."""

from __future__ import annotations

import numpy as np

from driftline.core.grids import N_SCORE_BINS, score_bin
from driftline.ingest.simulate import SimSpec, stream

DAY = 86400.0
START = 1_790_000_000.0 - (1_790_000_000.0 % DAY)


def day_histograms(spec: SimSpec | None = None) -> dict[tuple[str, int], np.ndarray]:
    """(variant, day) → a 3 × N_SCORE_BINS histogram, rows (negative, positive, unlabelled), final labels."""
    spec = spec or SimSpec(start=START)
    preds: dict[str, tuple[str, int, float]] = {}
    labels: dict[str, int] = {}
    for ev in stream(spec):
        if ev["type"] == "prediction":
            ts = float(np.datetime64(ev["ts"].rstrip("Z")).astype("datetime64[us]").astype(np.int64)) / 1e6
            preds[ev["prediction_id"]] = (ev["variant"], int((ts - spec.start) // DAY), ev["score"])
        else:
            labels[ev["prediction_id"]] = int(ev["label"])
    out: dict[tuple[str, int], np.ndarray] = {}
    for pid, (v, d, s) in preds.items():
        h = out.setdefault((v, d), np.zeros((3, N_SCORE_BINS), np.int64))
        h[labels.get(pid, 2), int(score_bin(np.array([s]))[0])] += 1
    return out
