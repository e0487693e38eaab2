"""Multivariate drift readout: the window's merged feature sample against the active reference's frozen sample
(`driftline drift` and the weekly report through readouts.drift.drift_document, the exporter's
driftline_multivariate_drift_* series and the multivariate triggers through readouts.drift.multivariate_reading).

Samples: at most WINDOW_ROWS rows of the window and REFERENCE_ROWS of the reference (half fit, half
calibration), both uniform samples by id hash (driftline.core.sample). Features: those the reference profile
tracks, with its kinds. Results are cached per (database, reference, window, variant, sample fingerprint).
"""

from __future__ import annotations

import math
import threading
from typing import Any

from ..analysis.multivariate import MIN_ROWS, MultivariateResult, multivariate_drift
from ..analysis.profiles import NumericProfile, Profile
from ..config import Config
from ..core.events import Prediction, decode, json_lines
from ..core.sample import FeatureSample, merge_samples
from ..ingest.pipeline import settings_from
from ..ingest.replay import CORRUPT, open_events
from ..ingest.sampling import batch_samples
from ..storage.samples import reference_sample, save_reference_sample, unsampled_predictions, window_sample
from ..storage.store import Store
from .references import Reference, ReferenceProblem, accepted, bucket_range
from .windows import Window

UNSAMPLED = ("stored by a driftline from before multivariate drift (migration 0009_mvsample), which kept no "
             "feature samples")
"""Why stored predictions have no feature sample: they cannot be sampled again from their buckets."""
SET_AGAIN = ("set the reference from a range stored since the upgrade, or from the events file "
             "(`driftline reference set --file PATH`)")
WINDOW_ROWS = 2000
REFERENCE_ROWS = 4000
_CACHE_SIZE = 16
_cache: dict[tuple[Any, ...], MultivariateResult] = {}
_lock = threading.Lock()


def reference_sample_from_buckets(store: Store, config: Config, model: str, start: float, end: float,
                                  variant: str | None = None) -> FeatureSample:
    """The reference sample of stored buckets in [start, end) widened to whole buckets."""
    lo, hi = bucket_range(start, end, config.bucket_s)
    return window_sample(store, model, lo, hi, REFERENCE_ROWS, variant)


def reference_sample_from_file(path: str, config: Config, model: str, start: float | None = None,
                               end: float | None = None, variant: str | None = None,
                               now: float | None = None) -> FeatureSample:
    """The reference sample of an events file's predictions (the model's, variant's and range's, as
    references.file_stats keeps them); invalid lines and events stamped more than a day after `now` are skipped."""
    settings = settings_from(config)
    b = config.bucket_s
    lo = -math.inf if start is None else math.floor(start / b) * b
    hi = math.inf if end is None else math.ceil(end / b) * b
    k = config.drift.sample_k
    total = FeatureSample.empty()
    batch: list[Any] = []

    def absorb() -> FeatureSample:
        parts = [s for (m, _, v, b0), s in batch_samples(settings, batch, k).items()
                 if m == model and (variant is None or v == variant) and lo <= b0 < hi]
        batch.clear()
        return merge_samples([total, *parts], REFERENCE_ROWS)

    try:
        with open_events(path) as (fh, _):
            for lineno, payload in json_lines(fh):
                d = decode(payload, "file:" + path, 0, lineno)
                if accepted(d, now) and isinstance(d.event, Prediction):  # type: ignore[union-attr]
                    batch.append(d)
                    if len(batch) >= 20_000:
                        total = absorb()
            total = absorb()
    except CORRUPT as err:
        raise ReferenceProblem(f"cannot read {path}: {getattr(err, 'strerror', None) or err}") from None
    return total


def freeze_reference_sample(store: Store, reference_id: int, sample: FeatureSample) -> None:
    """Store the sample with the reference version it belongs to."""
    save_reference_sample(store, reference_id, sample)


def _features(profile: Profile) -> list[tuple[str, str]]:
    return [(f.feature, "numeric" if isinstance(f, NumericProfile) else "categorical") for f in profile.features]


def multivariate_result(store: Store, config: Config, model: str, window: Window, variant: str | None,
                        ref: Reference, profile: Profile) -> MultivariateResult | None:
    """Multivariate drift of the window against the reference (with its profile); None when the reference was
    stored without a feature sample."""
    ref_sample = reference_sample(store, ref.id)
    if ref_sample is None:
        return None
    cur = window_sample(store, model, window.start, window.end, WINDOW_ROWS, variant)
    d = config.drift
    key = (store.url, model, ref.id, ref.created_at, window.start, window.end, variant, d.alpha, d.pca_variance,
           cur.tau, cur.hashes)
    with _lock:
        hit = _cache.get(key)
    if hit is not None:
        return hit
    result = multivariate_drift(ref_sample.rows, cur.rows, _features(profile), d.alpha, d.pca_variance)
    with _lock:
        while len(_cache) >= _CACHE_SIZE:
            _cache.pop(next(iter(_cache)))
        _cache[key] = result
    return result


def multivariate_block(store: Store, config: Config, model: str, window: Window, variant: str | None,
                       ref: Reference, profile: Profile) -> dict[str, Any]:
    """The `multivariate` block of `driftline drift --json` (and the weekly report)."""
    r = multivariate_result(store, config, model, window, variant, ref, profile)
    if r is None:
        return {"method": "pca_reconstruction", "drifted": None,
                "note": "the active reference has no feature sample (it was set before multivariate drift "
                        f"existed): {SET_AGAIN}"}
    doc = r.to_json()
    note = unsampled_note(store, model, window, variant, ref, r) if r.drifted is None else None
    return doc if note is None else {**doc, "note": note}


def unsampled_note(store: Store, model: str, window: Window, variant: str | None, ref: Reference,
                   r: MultivariateResult) -> str | None:
    """Why a sample is too small when its predictions were stored without feature samples (an upgrade from before
    multivariate drift), and what to do; None when that is not the reason (the analysis' own note stands)."""
    found = unsampled_part(store, model, window, variant, ref, r)
    if found is None:
        return None
    part, missing = found
    if part == "reference":
        return (f"the active reference's sample holds {r.n_fit + r.n_calibration:,} rows: {missing:,} of its "
                f"{ref.n:,} predictions were {UNSAMPLED}; {SET_AGAIN}")
    return (f"the window's sample holds {r.n_window:,} rows: {missing:,} of its predictions were "
            f"{UNSAMPLED}; windows stored since the upgrade have them")


def unsampled_part(store: Store, model: str, window: Window, variant: str | None, ref: Reference,
                   r: MultivariateResult) -> tuple[str, int] | None:
    """("reference" or "window", its predictions without feature samples) when that part's sample is too small
    because they were stored before multivariate drift; None otherwise."""
    if min(r.n_fit, r.n_calibration) < MIN_ROWS and ref.source == "window" and ref.start is not None \
            and ref.end is not None:
        missing = unsampled_predictions(store, model, ref.start, ref.end, ref.variant)
        if missing:
            return "reference", missing
    if r.n_window < MIN_ROWS:
        missing = unsampled_predictions(store, model, window.start, window.end, variant)
        if missing:
            return "window", missing
    return None


def reference_sample_note(store: Store, model: str, start: float, end: float, variant: str | None, n: int,
                          sample: FeatureSample) -> tuple[int, str | None]:
    """(predictions of a stored range without feature samples, the note `reference set` prints about them)."""
    missing = unsampled_predictions(store, model, start, end, variant)
    if not missing:
        return 0, None
    rows = len(sample.rows)
    then = (f"fewer than {2 * MIN_ROWS}, so multivariate drift will give no verdict against this reference; "
            f"{SET_AGAIN}") if rows < 2 * MIN_ROWS else "multivariate drift compares windows with those only"
    return missing, (f"{missing:,} of the range's {n:,} predictions were {UNSAMPLED}: its multivariate sample "
                     f"holds {rows:,} rows, {then}")
