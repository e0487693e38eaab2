"""Pluggable drift statistics for triggers and the exporter: a provider function returns per-feature readings.

This hook keeps triggers and the exporter independent of the drift analysis; `default_provider()` gives the
readings against the model's active stored reference (driftline.drift_readout.drift_readings).
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
    """Drift readings against the model's active stored reference (`driftline reference set`).

    Without a reference there are no readings: drift triggers show insufficient_data and no drift series are
    exported, so the CLI and Prometheus never disagree about what drift is measured against.
    """
    from ..drift_readout import drift_readings  # imported here: drift_readout imports DriftReading from us

    return drift_readings
