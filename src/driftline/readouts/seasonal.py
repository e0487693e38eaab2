"""Seasonal references over stored buckets: build a reference's per-season slices (`reference set
--seasonality`), and give a window the reference mixed from its own seasons (`drift`, the exporter, triggers,
the weekly report). The statistics are the pure functions of analysis.seasons and analysis.season_mix.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from ..analysis.profiles import Profile
from ..analysis.season_mix import Mixture, mix_profile, mix_weights
from ..analysis.seasons import (
    HOUR_S, NONE, SeasonalSlices, check_seasonality, season_count, season_of, season_unit, slice_from_stats,
)
from ..config import Config, ConfigError
from ..core.stats import merge
from ..storage.compaction import COMPACTED_SHARD, DAY_S
from ..storage.bucket_row import BucketRow
from ..storage.store import Store
from .windows import Window, window_rows


def check_bucket(seasonality: str, bucket_s: int, field: str) -> str:
    """The seasonality, or ConfigError naming the field when it is unknown or the buckets are too long for it
    (hour_of_day and both need buckets that divide an hour, day_of_week buckets that divide a day)."""
    try:
        check_seasonality(seasonality, field)
    except ValueError as err:
        raise ConfigError(str(err)) from None
    unit = season_unit(seasonality)
    if seasonality != NONE and unit % bucket_s:
        raise ConfigError(f"{field}: {seasonality} needs buckets that divide {'an hour' if unit == HOUR_S else 'a day'}"
                          f" (bucket is {bucket_s} s)")
    return seasonality


def _span(row: BucketRow, bucket_s: int) -> int:
    return DAY_S if row.shard == COMPACTED_SHARD else bucket_s


def _hours(rows: Iterable[BucketRow], bucket_s: int) -> int:
    """Distinct clock hours the rows cover (a compacted day row covers 24)."""
    seen: set[int] = set()
    for r in rows:
        span = _span(r, bucket_s)
        seen.update(range(r.bucket_start // HOUR_S, math.ceil((r.bucket_start + span) / HOUR_S)))
    return len(seen)


def season_counts(rows: Iterable[BucketRow], bucket_s: int, seasonality: str) -> dict[int | None, int]:
    """Predictions per season (None: rows spanning several seasons, e.g. compacted days under hour_of_day)."""
    out: dict[int | None, int] = defaultdict(int)
    for r in rows:
        if r.stats.predictions:
            out[season_of(r.bucket_start, _span(r, bucket_s), seasonality)] += r.stats.predictions
    return dict(out)


def build_seasonal(store: Store, config: Config, model: str, lo: float, hi: float, variant: str | None,
                   profile: Profile, seasonality: str) -> SeasonalSlices:
    """Per-season slices of the stored buckets in [lo, hi) (whole buckets), on the profile's layout."""
    by_season: dict[int | None, list[BucketRow]] = defaultdict(list)
    # window_rows, as the reference's own profile (references.window_stats): a compacted day the range cuts is left
    # out whole, so the slices hold exactly the profile's predictions (store.buckets gave that day's row whole)
    for r in window_rows(store, model, Window(lo, hi), variant, None, features="packed"):
        if r.stats.predictions:
            by_season[season_of(r.bucket_start, _span(r, config.bucket_s), seasonality)].append(r)
    unplaced = by_season.pop(None, [])
    slices = {s: slice_from_stats(profile, merge(r.stats for r in rows), _hours(rows, config.bucket_s))
              for s, rows in by_season.items()}
    return SeasonalSlices(seasonality, slices, sum(r.stats.predictions for r in unplaced))


def window_mixture(profile: Profile, seasonal: SeasonalSlices, rows: list[BucketRow], config: Config) -> Mixture:
    """The reference a window's rows are compared with: its seasons' slices weighted by its own predictions."""
    counts = season_counts(rows, config.bucket_s, seasonal.seasonality)
    return mix_profile(profile, seasonal, counts, config.drift.season_min_n)


def fallback_predictions(seasonal: SeasonalSlices, rows: list[BucketRow], config: Config) -> int:
    """Window predictions compared with the whole reference (thin, missing or unplaced seasons); rows need no
    feature histograms."""
    counts = season_counts(rows, config.bucket_s, seasonal.seasonality)
    _, uses = mix_weights(seasonal, counts, config.drift.season_min_n)
    return sum(u.window_n for u in uses if u.fallback is not None)


def seasonal_block(seasonal: SeasonalSlices | None, mixture: Mixture | None, min_n: int) -> dict[str, Any]:
    """The `seasonality` block of the drift document: which seasonality, per window season the reference
    hours and predictions behind it, and the fallbacks taken (with the rule)."""
    if seasonal is None or mixture is None:
        return {"seasonality": NONE}
    fb = mixture.fallbacks
    return {"seasonality": seasonal.seasonality, "seasons_in_reference": len(seasonal.slices),
            "seasons_possible": season_count(seasonal.seasonality), "min_n": min_n,
            "reference_n_effective": mixture.n_effective,
            "seasons": [u.to_json() for u in mixture.uses],
            "fallback": {"seasons": [u.label for u in fb], "window_n": sum(u.window_n for u in fb),
                         "rule": f"a season with fewer than {min_n} reference predictions (drift.season_min_n), "
                                 "none, or a bucket spanning several seasons is compared with the whole reference"}}
