"""Seasons of a seasonal reference: which season a bucket belongs to, and a season's reference counts.

A seasonal reference keeps, besides its whole profile, one slice per season (hour of day, day of week, or
both; UTC): the season's counts on the whole profile's layout (fine histograms of numeric features and the
score, frozen-bin counts of categorical features, labelled and positive counts). Slices are pure data built
from merged BucketStats; analysis.season_mix mixes them for a window.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.stats import NEG, POS, BucketStats, absent_as_missing
from .fine_grid import FineSample, fine_sample, score_sample
from .profiles import CategoricalProfile, NumericProfile, Profile, rebin

NONE, HOUR_OF_DAY, DAY_OF_WEEK, BOTH = "none", "hour_of_day", "day_of_week", "both"
SEASONALITIES = (NONE, HOUR_OF_DAY, DAY_OF_WEEK, BOTH)
HOUR_S, DAY_S = 3600, 86400
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_EPOCH_WEEKDAY = 3
"""1970-01-01 (epoch day 0) was a Thursday; weekday 0 is Monday (ISO)."""


def check_seasonality(name: str, field: str = "seasonality") -> str:
    """The seasonality name, or ValueError naming the field and the allowed values."""
    if name not in SEASONALITIES:
        raise ValueError(f"{field}: {name!r} is not one of {', '.join(SEASONALITIES)}")
    return name


def season_unit(seasonality: str) -> int:
    """Length of the time unit a season is made of: an hour (hour_of_day, both) or a day (day_of_week)."""
    return DAY_S if seasonality == DAY_OF_WEEK else HOUR_S


def season_count(seasonality: str) -> int:
    """How many seasons there are: 24, 7, 168 (1 for none)."""
    return {HOUR_OF_DAY: 24, DAY_OF_WEEK: 7, BOTH: 168}.get(seasonality, 1)


def season_of(start: float, span_s: float, seasonality: str) -> int | None:
    """The season (UTC) of a bucket [start, start + span_s); None when it spans more than one season's unit
    (a compacted day row under hour_of_day, say), so it cannot be placed."""
    unit = season_unit(seasonality)
    if start % unit + span_s > unit:
        return None
    day = math.floor(start / DAY_S)
    hour = int((start - day * DAY_S) // HOUR_S)
    weekday = (day + _EPOCH_WEEKDAY) % 7
    if seasonality == HOUR_OF_DAY:
        return hour
    if seasonality == DAY_OF_WEEK:
        return weekday
    if seasonality == BOTH:
        return weekday * 24 + hour
    return 0


def season_label(season: int | None, seasonality: str) -> str:
    """Human name of a season: "01:00", "Mon", "Mon 01:00" (UTC); "unplaced" for None."""
    if season is None:
        return "unplaced"
    if seasonality == HOUR_OF_DAY:
        return f"{season:02d}:00"
    if seasonality == DAY_OF_WEEK:
        return WEEKDAYS[season]
    if seasonality == BOTH:
        return f"{WEEKDAYS[season // 24]} {season % 24:02d}:00"
    return "all"


@dataclass(frozen=True, slots=True)
class SeasonSlice:
    """One season's reference counts on the whole profile's layout; hours = reference hours (units) it holds."""

    hours: int
    n: int
    positives: int
    labelled: int
    numeric: Mapping[str, FineSample]
    categorical: Mapping[str, np.ndarray]
    score: FineSample | None

    def to_json(self) -> dict[str, Any]:
        return {"hours": self.hours, "n": self.n, "k": self.positives, "labelled": self.labelled,
                "numeric": {f: _fine_json(s) for f, s in self.numeric.items()},
                "categorical": {f: c.tolist() for f, c in self.categorical.items()},
                "score": None if self.score is None else _fine_json(self.score)}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SeasonSlice:
        return cls(int(d["hours"]), int(d["n"]), int(d["k"]), int(d["labelled"]),
                   {f: _fine_from(s) for f, s in d["numeric"].items()},
                   {f: np.asarray(c, dtype=np.int64) for f, c in d["categorical"].items()},
                   None if d.get("score") is None else _fine_from(d["score"]))


def _fine_json(s: FineSample) -> dict[str, Any]:
    return {"idx": s.idx.tolist(), "count": s.counts.tolist(), "other": s.other, "missing": s.missing}


def _fine_from(d: Mapping[str, Any]) -> FineSample:
    return FineSample(np.asarray(d["idx"], dtype=np.int64), np.asarray(d["count"], dtype=np.int64),
                      int(d["other"]), int(d["missing"]))


def slice_from_stats(profile: Profile, stats: BucketStats, hours: int) -> SeasonSlice:
    """A season's counts from its merged buckets, on the profile's layout (absent keys count as missing)."""
    n = stats.predictions
    num: dict[str, FineSample] = {}
    cat: dict[str, np.ndarray] = {}
    for p in profile.features:
        fh = absent_as_missing(stats.features.get(p.feature), n)
        if isinstance(p, NumericProfile):
            num[p.feature] = fine_sample(fh)
        else:
            cat[p.feature] = rebin(p, fh)
    c = stats.conf
    score = score_sample(stats.hist) if profile.score is not None else None
    return SeasonSlice(hours, n, int(c[POS].sum()), int(c[POS].sum() + c[NEG].sum()), num, cat, score)


def whole_slice(profile: Profile) -> SeasonSlice:
    """The whole reference as one slice (the fallback of a thin or unplaced season)."""
    num = {p.feature: p.fine for p in profile.features if isinstance(p, NumericProfile)}
    cat = {p.feature: p.counts for p in profile.features if isinstance(p, CategoricalProfile)}
    score = None if profile.score is None else profile.score.fine
    return SeasonSlice(0, profile.n, profile.positives, profile.labelled, num, cat, score)


@dataclass(frozen=True, slots=True)
class SeasonalSlices:
    """A reference's seasonal part: the seasonality, one slice per season seen, and the predictions left out
    of every slice because their bucket spans several seasons (compacted day rows under hour_of_day)."""

    seasonality: str
    slices: Mapping[int, SeasonSlice]
    unplaced_n: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"seasonality": self.seasonality, "unplaced_n": self.unplaced_n,
                "slices": {str(k): s.to_json() for k, s in sorted(self.slices.items())}}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SeasonalSlices:
        return cls(check_seasonality(str(d["seasonality"])),
                   {int(k): SeasonSlice.from_json(s) for k, s in d["slices"].items()}, int(d.get("unplaced_n", 0)))

    def summary(self) -> list[dict[str, Any]]:
        """Per season seen: label, reference hours and predictions (for `reference show`)."""
        return [{"season": season_label(k, self.seasonality), "hours": s.hours, "n": s.n}
                for k, s in sorted(self.slices.items())]
