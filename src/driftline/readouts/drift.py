"""Readouts over stored windows: drift against the active reference (`driftline drift`, drift triggers and
the exporter's drift series), calibration with the base-rate effect and label-free early warning
(`driftline calibration`), and metrics by slice (`driftline slices`).

Windows come from report_metrics.resolve_window; a window's statistics are the merged stored buckets
(with feature histograms for drift). The statistics themselves are the pure functions of driftline.analysis.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Any

from ..analysis.calibration import calibration_report
from ..analysis.drift import drift_report
from ..analysis.drift_results import DriftThresholds
from ..analysis.estimates import (base_rate_effect, compare_estimate, early_warning, realised_metrics,
                                  threshold_in_force)
from ..analysis.profiles import Profile
from ..analysis.season_mix import Mixture
from ..analysis.seasons import SeasonalSlices
from ..config import Config
from ..durations import format_duration
from .drift_notes import untracked_values, with_vanished
from .estimated import calibrated_block
from .headline import headline_variant, scope_json
from .multivariate import multivariate_block, multivariate_result, unsampled_part
from .references import NoReference, Reference, active_reference_key, load_reference
from .matured_part import matured_split, maturing
from .maturity import implicit_too_early_note, maturity_hint, maturity_wait
from .metrics import resolve_window
from .seasonal import seasonal_block, window_mixture
from ..core.stats import BucketStats
from ..storage.store import Store
from .windows import Window, merged, shift_keeping_days, window_ending, window_rows

"""Slice targets when neither config.targets nor a trigger gives one: seed 000 step 8 (review below 70 % recall or
above 8 % FPR)."""
_CACHE_SIZE = 8
_profiles: dict[tuple[str, str, int, float], tuple[Reference, Profile, SeasonalSlices | None]] = {}
_lock = threading.Lock()


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


@dataclass(frozen=True, slots=True)
class MultivariateReading:
    """Multivariate drift of a window: error ratio to the reference's (1 = as expected), p-value, verdict."""

    ratio: float | None
    error: float | None
    p_value: float | None
    drifted: bool
    n: int


def thresholds(config: Config) -> DriftThresholds:
    """Drift thresholds from the config's `drift` section."""
    d = config.drift
    return DriftThresholds(psi_warning=d.psi_warning, psi_alert=d.psi_alert, js=d.js, alpha=d.alpha,
                           prevalence_change=d.prevalence_change)


def query_window(store: Store, config: Config, model: str | None, window_s: float, at: float | None) -> Window:
    """The window ending at `at` (default: newest prediction stored); an empty window when nothing is stored."""
    w = resolve_window(store, config, model, window_s, at)
    return w if w is not None else window_ending(at or 0.0, window_s, config.bucket_s)


def active_reference(store: Store, model: str) -> tuple[Reference, Profile] | None:
    """The model's active reference and its profile (cached per database, id and creation time: a stored
    version never changes, so only the cheap key is read on every call)."""
    hit = active_reference_seasons(store, model)
    return None if hit is None else hit[:2]


def active_reference_seasons(store: Store, model: str) -> tuple[Reference, Profile, SeasonalSlices | None] | None:
    """active_reference plus its per-season slices (None for a plain reference), from the same cache."""
    found = active_reference_key(store, model)
    if found is None:
        return None
    key = (store.url, model, *found)
    with _lock:
        hit = _profiles.get(key)
    if hit is None:
        ref = load_reference(store, model, found[0])
        if ref is None:
            return None
        hit = (ref, ref.profile(), ref.seasonal())
        with _lock:
            while len(_profiles) >= _CACHE_SIZE:
                _profiles.pop(next(iter(_profiles)))
            _profiles[key] = hit
    return hit


def _stats(store: Store, model: str, window: Window, variant: str | None, features: bool) -> BucketStats:
    return merged(window_rows(store, model, window, variant, features="packed" if features else False))


def _current_and_reference(store: Store, config: Config, model: str, window: Window, variant: str | None,
                           profile: Profile, seasonal: SeasonalSlices | None
                           ) -> tuple[BucketStats, Profile, Mixture | None]:
    """The window's merged statistics (feature histograms included) and the reference profile to compare them
    with: the whole profile, or for a seasonal reference the mix of the window's seasons (readouts.seasonal)."""
    rows = window_rows(store, model, window, variant, features="packed")
    if seasonal is None:
        return merged(rows), profile, None
    mixture = window_mixture(profile, seasonal, rows, config)
    return merged(rows), mixture.profile, mixture


def _prevalence_part(store: Store, config: Config, model: str, window: Window, variant: str | None,
                     cur: BucketStats) -> tuple[Any, str | None]:
    """The confusion counts the window's prevalence is read over, and the note saying so: under the
    implicit-negative policy its matured part (young predictions have their early positives but not yet their
    implicit negatives, so they read prevalence high: 0.51 for 0.05 on a credit stream); else the window's."""
    rows = window_rows(store, model, window, variant, features=False)
    old, note = matured_split(rows, maturing(store, config), "prevalence and its drift test")
    if old is None:
        return cur.conf, None
    return (merged(old).conf if old else cur.conf * 0), note


def _window_json(window: Window, stats: BucketStats) -> dict[str, Any]:
    labelled = int(stats.conf[:2].sum())
    return {**window.to_json(), "n": stats.predictions, "labelled": labelled}


def _maturity(store: Store, config: Config, model: str, window: Window, wj: dict[str, Any], command: str
              ) -> dict[str, Any] | None:
    """Why the window has fewer than 30 labels and which window to read instead (None when it has enough)."""
    return maturity_hint(store, config, model, window, wj["n"], wj["labelled"], command)


# --- drift -----------------------------------------------------------------------------------------------
def drift_document(store: Store, config: Config, model: str, window: Window, variant: str | None = None
                   ) -> dict[str, Any]:
    """`driftline drift --json`: features ranked by severity, the score and prevalence vs the active reference.

    Raises NoReference (exit code 2 in the CLI) when no reference is set.
    """
    active = active_reference_seasons(store, model)
    if active is None:
        raise NoReference(model, store.bucket_range(model))
    ref, profile, seasonal = active
    read = headline_variant(config.ab, variant)  # shadow mode: the production arm only
    cur, compared, mixture = _current_and_reference(store, config, model, window, read, profile, seasonal)
    pconf, pnote = _prevalence_part(store, config, model, window, read, cur)
    result = drift_report(compared, cur.features, cur.hist, cur.conf, thresholds(config), pconf)
    body = result.to_json()
    late = implicit_too_early_note(store, config, model) if pnote is not None else None
    body["prevalence"] = {**body["prevalence"], "over": "window" if pnote is None else "matured part",
                          "note": "; ".join(n for n in (pnote, late) if n) or None}
    return {"model": model, "variant": variant, "scope": scope_json(config.ab, variant),
            "reference": {**ref.summary(), "prevalence": profile.prevalence},
            "seasonality": seasonal_block(seasonal, mixture, config.drift.season_min_n),
            "window": _window_json(window, cur), "features": with_vanished(body["features"], config.drift.alpha), "score": body["score"],
            "prevalence": body["prevalence"], "drifted": list(result.drifted),
            "thresholds": body["thresholds"], "untracked": body["untracked"],
            "untracked_values": untracked_values(result.untracked, cur.features, cur.predictions),
            "dropped": [{"feature": f, "reason": r} for f, r in profile.dropped],
            "multivariate": multivariate_block(store, config, model, window, read, ref, profile),
            "undeclared": undeclared_block(store), "over_limit": over_limit_block(store, config.max_features)}


def undeclared_block(store: Store) -> dict[str, Any] | None:
    """Feature names present in events but not declared under `features:` (so not monitored): the refused
    occurrences in total and per recorded name, most frequent first (`names_complete` false when some occurrences
    went unnamed past MAX_UNDECLARED_NAMES: at least that many names; an event with 500 undeclared features read
    "50 feature names seen"); None when there are none. Counted at ingestion for all models and all time (the
    counters are not per window)."""
    counters = store.counters()
    total = counters.get(("features_untracked", "undeclared"), 0)
    if not total:
        return None
    named = store.undeclared_features()
    names = sorted(named.items(), key=lambda kv: (-kv[1], kv[0]))
    return {"occurrences": total, "names": [{"feature": n, "count": c} for n, c in names],
            "names_complete": sum(named.values()) == total, "scope": "all models, all time (ingestion counters)"}


def over_limit_block(store: Store, max_features: int) -> dict[str, Any] | None:
    """Feature names refused because a bucket already tracked `max_features` names (so not monitored there): the
    refused occurrences in total, the names recorded (most frequent first; `names_complete` false when some
    occurrences went unnamed past the bound MAX_OVER_LIMIT_NAMES: at least that many names) and the limit; None
    when there are none.
    Tryout: 851 of 901 features dropped out of monitoring while `drift` said nothing. All models, all time."""
    total = store.counters().get(("features_untracked", "over_limit"), 0)
    if not total:
        return None
    named = store.over_limit_features()
    names = sorted(named.items(), key=lambda kv: (-kv[1], kv[0]))
    return {"occurrences": total, "max_features": max_features,
            "names": [{"feature": n, "count": c} for n, c in names],
            "names_complete": sum(named.values()) == total,
            "scope": "all models, all time (ingestion counters)"}


def drift_readings(store: Store, config: Config, model: str, window: Window, variant: str | None
                   ) -> list[DriftReading]:
    """Drift provider for triggers and the exporter (triggers.drift_hook): one reading per tracked feature
    and one for the score (feature None), against the active reference; [] without a reference or data."""
    active = active_reference_seasons(store, model)
    if active is None:
        return []
    variant = headline_variant(config.ab, variant)
    cur, compared, _ = _current_and_reference(store, config, model, window, variant, active[1], active[2])
    if cur.predictions == 0:
        return []
    pconf, _ = _prevalence_part(store, config, model, window, variant, cur)  # as `drift`: one BH family
    result = drift_report(compared, cur.features, cur.hist, cur.conf, thresholds(config), pconf)
    out = [DriftReading(f.feature, f.psi, f.js, f.drifted, f.n_current) for f in result.features]
    if result.score is not None:
        s = result.score
        out.append(DriftReading(None, s.psi, s.js, s.drifted, s.n_current))
    return out


def multivariate_reading(store: Store, config: Config, model: str, window: Window, variant: str | None
                         ) -> MultivariateReading | None:
    """Multivariate drift for triggers and the exporter: None without a reference, a reference feature sample
    or a verdict (too few sampled rows)."""
    r = multivariate_outcome(store, config, model, window, variant)
    return r if isinstance(r, MultivariateReading) else None


def multivariate_outcome(store: Store, config: Config, model: str, window: Window, variant: str | None
                         ) -> MultivariateReading | str:
    """The multivariate reading, or why there is none (a readouts.absent.REASONS code, for the exporter)."""
    active = active_reference(store, model)
    if active is None:
        return "no_reference"
    variant = headline_variant(config.ab, variant)
    r = multivariate_result(store, config, model, window, variant, *active)
    if r is None:
        return "reference_predates_samples"
    if r.drifted is None:
        part = unsampled_part(store, model, window, variant, active[0], r)
        return "too_few_sampled_rows" if part is None else f"{part[0]}_unsampled"
    return MultivariateReading(r.ratio, r.error, r.p_value, r.drifted, r.n_window)


# --- calibration, base-rate effect, early warning ---------------------------------------------------------
def maturity_period(store: Store, config: Config, model: str, window: Window, variant: str | None = None
                    ) -> tuple[float | None, str]:
    """How long after prediction a window's labels count as matured, and how that was decided.

    implicit-negative policy: its `implicit_negative_after` (every prediction is labelled by then);
    explicit outcomes: the upper edge of the delay bin holding the 95th percentile (maturity_wait, the rule of
    `--matured`) of the predictions labelled in the `labels.horizon` before the window's end. Rounded up to
    whole buckets; None when no label was ever seen.
    """
    b = config.bucket_s
    look = Window(window.end - config.labels.horizon_s, window.end)
    hist = None if config.labels.implicit_after_s is not None else (  # implicit: no need to read the delays
        _stats(store, model, look, headline_variant(config.ab, variant), False).delay)
    wait, method = maturity_wait(config, hist)
    if wait is None:
        return None, method
    return max(math.ceil(wait / b), 1) * b, method


def calibration_document(store: Store, config: Config, model: str, window: Window, variant: str | None = None,
                         matured_after_s: float | None = None) -> dict[str, Any]:
    """`driftline calibration --json`: calibration of the window's labelled predictions, the base-rate effect
    against the active reference, the label-free early warning on its unlabelled predictions (estimated),
    and, for the window one label-maturity period earlier, the estimate next to the realised values.

    The earlier window's estimate is early_warning(scope "all") over all its predictions: label-free, it
    depends only on the scores, so it is exactly what was estimated when those predictions were made.
    """
    scope = scope_json(config.ab, variant)
    variant = headline_variant(config.ab, variant)  # shadow mode: the production arm only
    rows = window_rows(store, model, window, variant, features=False)
    stats = merged(rows)
    old_rows, young = matured_split(rows, maturing(store, config), "reliability, ECE, the Brier decomposition, "
                                    "temperature and the base rate (prevalence)")
    labelled = stats if old_rows is None else merged(old_rows)  # implicit negatives: the matured part
    active = active_reference(store, model)
    ref, profile = active if active is not None else (None, None)
    bre = base_rate_effect(labelled, ref.confusion_stats() if ref else None,
                           profile.prevalence if profile is not None else None)
    cut = threshold_in_force(stats, config.threshold)  # events may carry their own threshold
    doc: dict[str, Any] = {
        "model": model, "variant": None if scope else variant, "scope": scope, "threshold": cut,
        "threshold_in_force": cut, "config_threshold": config.threshold, "window": _window_json(window, stats),
        "reference": None if ref is None else {**ref.summary(), "prevalence": profile.prevalence if profile else None},
        "calibration": calibration_report(labelled).to_json(),
        "base_rate": {**bre.to_json(), "over": "window" if old_rows is None else "matured part"},
        "early_warning": early_warning(stats, cut, "unlabelled").to_json(),
    }
    doc["label_maturity"] = _maturity(store, config, model, window, doc["window"], "calibration")
    late = implicit_too_early_note(store, config, model)  # the matured part's labels are still coming
    if young or late:
        doc["note"] = "; ".join(n for n in (young, late) if n)
    method = "given"
    period = matured_after_s
    if period is None:
        period, method = maturity_period(store, config, model, window, variant)
    if period is None:
        doc["matured"] = {"maturity": {"seconds": None, "method": method}, "window": None, "comparison": None,
                          "note": "no labelled predictions yet: no maturity period to look back"}
        doc["calibrated"] = calibrated_block(stats, None, profile, cut, variant)
        return doc
    period = shift_keeping_days(store, model, window, period, config.labels.horizon_s)
    earlier = Window(window.start - period, window.end - period)
    old = _stats(store, model, earlier, variant, False)
    comparison = compare_estimate(early_warning(old, threshold_in_force(old, config.threshold), "all"),
                                  realised_metrics(old))
    doc["matured"] = {"maturity": {"seconds": period, "label": format_duration(period), "method": method},
                      "window": _window_json(earlier, old), "comparison": comparison.to_json()}
    doc["calibrated"] = calibrated_block(stats, old, profile, cut, variant)
    return doc


def estimated_block(store: Store, config: Config, model: str, window: Window, variant: str | None = None
                    ) -> dict[str, Any] | None:
    """The `calibrated` block of calibration_document alone (for the exporter); None without a reference."""
    active = active_reference(store, model)
    if active is None:
        return None
    variant = headline_variant(config.ab, variant)
    stats = _stats(store, model, window, variant, False)
    period, _ = maturity_period(store, config, model, window, variant)
    if period is not None:
        period = shift_keeping_days(store, model, window, period, config.labels.horizon_s)
    old = None if period is None else _stats(store, model, Window(window.start - period, window.end - period),
                                             variant, False)
    return calibrated_block(stats, old, active[1], threshold_in_force(stats, config.threshold), variant)
