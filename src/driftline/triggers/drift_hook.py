"""Pluggable drift statistics for triggers and the exporter: a provider function returns per-feature readings.

The drift analysis lives in driftline.analysis.drift (its own module); this hook keeps triggers and the
exporter independent of it. `default_provider()` gives the drift module's own provider if it offers one, else
BaselineDrift (window vs the first stored window of the same length); None without the drift module (drift
triggers are then insufficient_data and no drift series are exported).
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


class BaselineDrift:
    """Drift provider comparing a window with the model's baseline: the first stored window of the same length
    (the weeks after go-live), profiled once with analysis.profiles and compared with analysis.drift.

    A current window overlapping the baseline has nothing to compare with and gets no readings.
    """

    def __init__(self) -> None:
        self._profiles: dict[tuple[str, str | None, float, int], Any] = {}

    def __call__(self, store: Store, config: Config, model: str, window: Window, variant: str | None
                 ) -> list[DriftReading]:
        from ..analysis.drift import drift_report
        from ..analysis.profiles import build_profile_from_stats
        from ..windows import merged

        rng = store.bucket_range(model)
        if rng is None:
            return []
        ref_start = rng[0]
        if window.start < ref_start + window.seconds:
            return []
        key = (model, variant, window.seconds, ref_start)
        profile = self._profiles.get(key)
        if profile is None:
            ref = merged(store.buckets(model, ref_start, ref_start + window.seconds, variant))
            profile = build_profile_from_stats(ref, declared=dict(config.features))
            self._profiles = {key: profile, **{k: v for k, v in self._profiles.items() if k[3] == ref_start}}
        cur = merged(store.buckets(model, window.start, window.end, variant))
        if cur.predictions == 0:
            return []
        result = drift_report(profile, cur.features, cur.hist, cur.conf)
        out = [DriftReading(f.feature, f.psi, f.js, f.drifted, f.n_current) for f in result.features
               if f.feature in config.features]  # label values bounded to the declared features
        if result.score is not None:
            out.append(DriftReading(None, result.score.psi, result.score.js, result.score.drifted,
                                    result.score.n_current))
        return out


def default_provider() -> DriftProvider | None:
    """The drift module's own provider (`drift_readings`) when it offers one, else the baseline comparison
    above; None when driftline.analysis.drift is not installed."""
    try:
        from ..analysis import drift
    except ImportError:
        return None
    provider = getattr(drift, "drift_readings", None)
    return provider if callable(provider) else BaselineDrift()
