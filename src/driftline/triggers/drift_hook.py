"""Pluggable drift statistics for triggers and the exporter: a provider function returns per-feature readings.

This hook keeps triggers and the exporter independent of the drift analysis; `default_provider()` gives the
readings against the model's active stored reference (driftline.readouts.drift.drift_readings).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..config import Config
from ..readouts.drift import DriftReading, drift_readings
from ..storage.store import Store
from ..readouts.windows import Window
from .model import Observation


DriftProvider = Callable[[Store, Config, str, Window, "str | None"], Sequence[DriftReading]]
"""(store, config, model, window, variant) → readings for the declared features and the score."""


def observation(readings: Sequence[DriftReading], metric: str, feature: str | None) -> Observation:
    """The psi/js reading of one feature (None: the score) as a trigger observation; `drifted`: 1/0 for a
    feature, or without one the number of features the report calls drifted."""
    if metric == "drifted":
        if feature is None:
            feats = [r for r in readings if r.feature is not None and r.drifted is not None]
            if not feats:
                return Observation(None, n=0)
            return Observation(float(sum(1 for r in feats if r.drifted)), n=max(r.n for r in feats))
        for r in readings:
            if r.feature == feature:
                return Observation(None if r.drifted is None else float(r.drifted), n=r.n)
        return Observation(None, n=0)
    for r in readings:
        if r.feature == feature:
            value = r.psi if metric == "psi" else r.js
            return Observation(value, n=r.n)
    return Observation(None, n=0)


def default_provider() -> DriftProvider | None:
    """Drift readings against the model's active stored reference (`driftline reference set`).

    Without a reference there are no readings: drift triggers show insufficient_data and no drift series are
    exported, so the CLI and Prometheus never disagree about what drift is measured against.
    """
    return drift_readings
