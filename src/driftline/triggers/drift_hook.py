"""Pluggable drift statistics for triggers and the exporter: a provider function returns per-feature readings.

The drift analysis lives in driftline.analysis.drift (its own module); this hook keeps triggers and the
exporter independent of it. `default_provider()` adapts that module when it is installed, else returns None
(drift triggers are then insufficient_data and no drift series are exported).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..config import Config
from ..store import Store
from ..windows import Window
from .model import Observation


@dataclass(frozen=True, slots=True)
class DriftReading:
    """Drift of one feature (feature None = the model score) in a window against the reference."""

    feature: str | None
    psi: float | None
    js: float | None
    drifted: bool | None
    n: int

    def to_json(self) -> dict[str, Any]:
        return {"feature": self.feature, "psi": self.psi, "js": self.js, "drifted": self.drifted, "n": self.n}


DriftProvider = Callable[[Store, Config, str, Window, "str | None"], Sequence[DriftReading]]
"""(store, config, model, window, variant) → readings for the declared features and the score."""


def observation(readings: Sequence[DriftReading], metric: str, feature: str | None) -> Observation:
    """The psi/js reading of one feature (None: the score) as a trigger observation."""
    for r in readings:
        if r.feature == feature:
            value = r.psi if metric == "psi" else r.js
            return Observation(value, n=r.n)
    return Observation(None, n=0)


def default_provider() -> DriftProvider | None:
    """The drift module's provider when driftline.analysis.drift is installed and offers one, else None."""
    try:
        from ..analysis import drift  # type: ignore[attr-defined]
    except ImportError:
        return None
    provider = getattr(drift, "drift_readings", None)
    return provider if callable(provider) else None
