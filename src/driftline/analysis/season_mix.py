"""The reference a window is compared with under a seasonal reference: the mix of its seasons' slices,
weighted by the window's own predictions per season.

A window with c_s predictions in season s (N in all) is compared with the distribution
    p_mix = Σ_j a_j · p_j,   a_j = (window predictions whose reference component is j) / N,
where component j is season s's slice, or the whole reference for a season that is thin (fewer than
`min_n` reference predictions) or unplaced (a bucket spanning several seasons). Seasons that fall back
share one component (the same sample counted once). The mixed reference has the sample size whose
multinomial noise matches the mix's, n_eff = 1 / Σ_j a_j² / n_j (n_j: the component's count of that
feature, score or labelled set), so every test and noise floor of analysis.drift applies unchanged:
its counts are p_mix · n_eff apportioned to integers that sum to round(n_eff) (largest remainders, each within 1 of
p_mix · n_eff) on the whole profile's frozen layout (cuts, categories, seen set kept).
A window within one season gets exactly that season's slice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .fine_grid import FineSample
from .profiles import CategoricalProfile, FeatureProfile, NumericProfile, Profile
from .seasons import SeasonalSlices, SeasonSlice, season_label, whole_slice

THIN, UNPLACED, MISSING_SLICE = "thin", "unplaced", "no_reference_hours"


@dataclass(frozen=True, slots=True)
class SeasonUse:
    """How one season of the window was compared: window predictions, the slice's reference hours and
    predictions, and the fallback taken (None: its own slice)."""

    season: int | None
    label: str
    window_n: int
    reference_hours: int
    reference_n: int
    fallback: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"season": self.label, "window_n": self.window_n, "reference_hours": self.reference_hours,
                "reference_n": self.reference_n, "fallback": self.fallback}


@dataclass(frozen=True, slots=True)
class Mixture:
    """The mixed reference profile of a window and how each of its seasons was served."""

    profile: Profile
    uses: tuple[SeasonUse, ...]
    n_effective: int

    @property
    def fallbacks(self) -> tuple[SeasonUse, ...]:
        return tuple(u for u in self.uses if u.fallback is not None)


def mix_weights(seasonal: SeasonalSlices, window_counts: Mapping[int | None, int], min_n: int
                ) -> tuple[list[tuple[float, SeasonSlice | None]], list[SeasonUse]]:
    """Components (weight, slice; None = the whole reference) and the per-season uses for the window's counts."""
    total = sum(c for c in window_counts.values() if c > 0)
    comps: list[tuple[float, SeasonSlice | None]] = []
    whole_w = 0.0
    uses: list[SeasonUse] = []
    for s, c in sorted(window_counts.items(), key=lambda kv: (kv[0] is None, kv[0] or 0)):
        if c <= 0:
            continue
        sl = None if s is None else seasonal.slices.get(s)
        why = UNPLACED if s is None else MISSING_SLICE if sl is None else THIN if sl.n < min_n else None
        label = season_label(s, seasonal.seasonality)
        uses.append(SeasonUse(s, label, c, 0 if sl is None else sl.hours, 0 if sl is None else sl.n, why))
        if why is None:
            comps.append((c / total, sl))
        else:
            whole_w += c / total
    if whole_w > 0:
        comps.append((whole_w, None))
    return comps, uses


def _mix(parts: Sequence[tuple[float, np.ndarray]]) -> np.ndarray:
    """round(p_mix · n_eff) of aligned count vectors with weights (vectors with no counts are left out)."""
    live = [(a, v.astype(np.float64)) for a, v in parts if a > 0 and v.sum() > 0]
    if not live:
        return np.zeros_like(parts[0][1], dtype=np.int64)
    norm = sum(a for a, _ in live)
    live = [(a / norm, v) for a, v in live]
    p = sum(a * v / v.sum() for a, v in live)
    n_eff = 1.0 / sum(a * a / v.sum() for a, v in live)
    return apportion(p * n_eff, int(np.rint(n_eff)))


def apportion(x: np.ndarray, total: int) -> np.ndarray:
    """Integers within 1 of x (≥ 0) that sum to `total` (largest remainders: floor, then +1 to the largest
    fractional parts, lowest index first on ties), so the mixed counts add up to the n_eff reported beside them;
    rounding each bin alone left their sum (n_reference) a few counts off n_eff (438 next to 437)."""
    base = np.floor(x + 1e-9).astype(np.int64)  # 1e-9: an exact count computed as 2.9999999999 stays 3
    short = total - int(base.sum())
    if short > 0:
        frac = x - base
        base[np.argsort(-frac, kind="stable")[:short]] += 1
    elif short < 0:  # only from the 1e-9 above: take back from the smallest fractional parts
        frac = x - base
        base[np.argsort(frac, kind="stable")[:-short]] -= 1
    return base


def _fine_vector(s: FineSample, idx: np.ndarray) -> np.ndarray:
    """[counts on idx…, other, missing] of a fine sample (idx a superset of its populated bins)."""
    v = np.zeros(len(idx) + 2, dtype=np.int64)
    v[np.searchsorted(idx, s.idx)] = s.counts
    v[-2], v[-1] = s.other, s.missing
    return v


def mix_fine(parts: Sequence[tuple[float, FineSample]]) -> FineSample:
    """The mixed fine sample (fine bins, other, missing) of weighted fine samples."""
    idx = np.unique(np.concatenate([s.idx for _, s in parts])).astype(np.int64)
    m = _mix([(a, _fine_vector(s, idx)) for a, s in parts])
    keep = m[:-2] > 0
    return FineSample(idx[keep], m[:-2][keep], int(m[-2]), int(m[-1]))


def _feature(p: FeatureProfile, comps: Sequence[tuple[float, SeasonSlice]]) -> FeatureProfile:
    if isinstance(p, NumericProfile):
        return replace(p, fine=mix_fine([(a, s.numeric.get(p.feature, _EMPTY)) for a, s in comps]))
    assert isinstance(p, CategoricalProfile)
    zero = np.zeros_like(p.counts)
    return replace(p, counts=_mix([(a, s.categorical.get(p.feature, zero)) for a, s in comps]))


_EMPTY = FineSample(np.zeros(0, np.int64), np.zeros(0, np.int64))


def mix_profile(profile: Profile, seasonal: SeasonalSlices, window_counts: Mapping[int | None, int],
                min_n: int) -> Mixture:
    """The reference profile to compare a window with, given its predictions per season (None = unplaced)."""
    raw, uses = mix_weights(seasonal, window_counts, min_n)
    if not raw:
        return Mixture(profile, (), profile.n)
    whole = whole_slice(profile)
    comps = [(a, whole if s is None else s) for a, s in raw]
    feats = tuple(_feature(p, comps) for p in profile.features)
    score = None if profile.score is None else replace(
        profile.score, fine=mix_fine([(a, s.score or _EMPTY) for a, s in comps]))
    prev = _mix([(a, np.array([s.positives, s.labelled - s.positives])) for a, s in comps])
    n = _mix([(a, np.array([s.n])) for a, s in comps])
    mixed = replace(profile, features=feats, score=score, positives=int(prev[0]), labelled=int(prev.sum()),
                    n=int(n[0]))
    return Mixture(mixed, tuple(uses), int(n[0]))
