"""Reference profiles: the frozen bins every current window is compared on, built from merged histograms.

A numeric feature keeps its reference fine histogram (grids.feature_bin, ~2 % resolution) and frozen
quantile bins whose edges are fine-grid edges, so re-binning any window is an exact sum of fine bins.
Frozen numeric layout: [underflow, q_1 … q_B, overflow, other, missing] — underflow/overflow hold values
in fine bins below/above the reference range, `other` non-numeric values of a numeric feature.
A categorical feature keeps its top-K categories; layout [top_1 … top_K, other, missing]. The score
profile is a numeric profile on the fine score grid (grids.SCORE_EDGES).
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ..core.feature_hists import OTHER as CATEGORY_OVERFLOW
from ..core.grids import feature_bin_lower
from ..core.stats import NEG, POS, BucketStats, FeatureHist, absent_as_missing
from .drift_stats import bridge_l1_quantile
from .fine_grid import (GRID_FEATURE, GRID_SCORE, FineSample, fine_sample, grid_edges, grid_mids, quantile_cuts,
                        score_sample)
from .sparse_rows import dense_rows, sparse_rows

NUMERIC, CATEGORICAL = "numeric", "categorical"
UNDERFLOW, OVERFLOW, OTHER, MISSING = "(underflow)", "(overflow)", "(other)", "(missing)"
"""Labels of the catch-all bins, in parentheses: a category may literally be called "other" or "missing" (the
fraud example's merchant_category has "other"), and its bin must not read like the catch-all one in `reference
show`, drift output and reports. Labels are computed for display and JSON, never stored."""
SCORE_NAME = "score"
PROFILE_VERSION = 1


@dataclass(frozen=True, slots=True)
class ProfileSettings:
    """How reference profiles are built (defaults: 10 quantile bins, top-20 categories, 50 features)."""

    numeric_bins: int = 10
    top_k: int = 20
    max_features: int = 50
    max_seen: int = 2000
    """Most frequent reference categories remembered for the unseen-category share."""
    score_bins: int = 10
    floor_draws: int = 500
    """Seeded Brownian-bridge draws for the Wasserstein noise-floor coefficient (see drift_stats)."""
    seed: int = 0

    def to_json(self) -> dict[str, int]:
        return {"numeric_bins": self.numeric_bins, "top_k": self.top_k, "max_features": self.max_features,
                "max_seen": self.max_seen, "score_bins": self.score_bins, "floor_draws": self.floor_draws,
                "seed": self.seed}


@dataclass(frozen=True, slots=True, eq=False)
class NumericProfile:
    """Reference of a numeric feature (or the score): fine histogram and frozen quantile cuts."""

    feature: str
    grid: str
    cuts: np.ndarray
    fine: FineSample
    w_noise: float = 0.0
    """95th percentile of ∫|B(F_ref(x))|dx: the no-drift W1 is ≤ w_noise·√(1/n_ref + 1/n_cur) 95 % of the time."""

    kind = NUMERIC

    @property
    def n(self) -> int:
        return self.fine.total

    @property
    def n_bins(self) -> int:
        return len(self.cuts) + 3

    @property
    def labels(self) -> tuple[str, ...]:
        e = grid_edges(self.grid, self.cuts)
        inner = tuple(f"[{a:.6g}, {b:.6g})" for a, b in zip(e[:-1], e[1:]))
        return (UNDERFLOW, *inner, OVERFLOW, OTHER, MISSING)

    @property
    def ref_counts(self) -> np.ndarray:
        return rebin_sample(self, self.fine)

    def mean_std(self) -> tuple[float | None, float | None]:
        """Mean and standard deviation of the reference numeric values (fine-bin midpoints)."""
        n = self.fine.n_numeric
        if n == 0:
            return None, None
        x = grid_mids(self.grid, self.fine.idx)
        w = self.fine.counts / n
        mu = float(w @ x)
        return mu, float(np.sqrt(max(float(w @ (x - mu) ** 2), 0.0)))

    def to_json(self) -> dict[str, object]:
        return {"feature": self.feature, "kind": NUMERIC, "grid": self.grid,
                "cuts": self.cuts.tolist(), "edges": grid_edges(self.grid, self.cuts).tolist(),
                "fine": {"idx": self.fine.idx.tolist(), "count": self.fine.counts.tolist()},
                "other": self.fine.other, "missing": self.fine.missing, "w_noise": self.w_noise}

    @classmethod
    def from_json(cls, d: Mapping[str, object]) -> NumericProfile:
        fine: Mapping[str, list[int]] = d["fine"]  # type: ignore[assignment]
        sample = FineSample(np.asarray(fine["idx"], dtype=np.int64), np.asarray(fine["count"], dtype=np.int64),
                            int(d["other"]), int(d["missing"]))  # type: ignore[call-overload]
        return cls(str(d["feature"]), str(d["grid"]), np.asarray(d["cuts"], dtype=np.int64), sample,
                   float(d["w_noise"]))  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True, eq=False)
class CategoricalProfile:
    """Reference of a categorical feature: top-K categories with counts, other, missing, seen categories."""

    feature: str
    categories: tuple[str, ...]
    counts: np.ndarray
    """Reference counts on the frozen layout [top_1 … top_K, other, missing]."""
    seen: frozenset[str]
    seen_truncated: bool = False
    distinct: int | None = None
    """Distinct reference categories (`seen` keeps the `max_seen` most frequent); None in profiles stored before."""

    kind = CATEGORICAL

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    @property
    def n_bins(self) -> int:
        return len(self.categories) + 2

    @property
    def labels(self) -> tuple[str, ...]:
        return (*self.categories, OTHER, MISSING)

    @property
    def ref_counts(self) -> np.ndarray:
        return self.counts

    def to_json(self) -> dict[str, object]:
        return {"feature": self.feature, "kind": CATEGORICAL, "categories": list(self.categories),
                "counts": self.counts.tolist(), "seen": sorted(self.seen), "seen_truncated": self.seen_truncated,
                "distinct": self.distinct}

    @classmethod
    def from_json(cls, d: Mapping[str, object]) -> CategoricalProfile:
        return cls(str(d["feature"]), tuple(d["categories"]),  # type: ignore[arg-type]
                   np.asarray(d["counts"], dtype=np.int64), frozenset(d["seen"]),  # type: ignore[arg-type]
                   bool(d.get("seen_truncated", False)), d.get("distinct"))  # type: ignore[arg-type]


FeatureProfile = NumericProfile | CategoricalProfile


def categories_of(fh: FeatureHist) -> dict[str, int]:
    """Category counts of a feature, numeric values keyed by their fine bin's value range."""
    if not fh.num:
        return fh.cat
    out = dict(fh.cat)
    for i, c in fh.num.items():
        lo, hi = feature_bin_lower(np.array([i, i + 1]))
        key = f"[{lo:.6g}, {hi:.6g})"
        out[key] = out.get(key, 0) + c
    return out


def rebin_sample(p: NumericProfile, s: FineSample) -> np.ndarray:
    """Exact counts of a fine sample on a numeric profile's frozen bins (fine bins summed)."""
    b = len(p.cuts) - 1
    out = np.zeros(b + 4, dtype=np.int64)
    if len(s.idx):
        # searchsorted(side=right): 0 = below lo (underflow), 1..b quantile bins, b+1 = at/above hi (overflow)
        pos = np.searchsorted(p.cuts, s.idx, side="right")
        np.add.at(out, pos, s.counts)
    out[b + 2], out[b + 3] = s.other, s.missing
    return out


def rebin(p: FeatureProfile, fh: FeatureHist | None) -> np.ndarray:
    """Counts of any current FeatureHist on a profile's frozen bins; they sum to fh.total exactly."""
    if isinstance(p, NumericProfile):
        return rebin_sample(p, fine_sample(fh))
    k = len(p.categories)
    out = np.zeros(k + 2, dtype=np.int64)
    if fh is None:
        return out
    cats = categories_of(fh)
    out[:k] = [cats.get(c, 0) for c in p.categories]
    out[k] = sum(cats.values()) - int(out[:k].sum())
    out[k + 1] = fh.missing
    return out


def unseen_count(p: CategoricalProfile, fh: FeatureHist) -> tuple[int, int]:
    """(current values in categories absent from the reference, current non-missing values)."""
    cats = categories_of(fh)
    new = cats.keys() - p.seen
    return sum(cats[c] for c in new), sum(cats.values())


UNSEEN_SHOWN = 5
"""New categories named per feature (the most frequent first)."""


def unseen_values(p: CategoricalProfile, fh: FeatureHist, k: int = UNSEEN_SHOWN) -> tuple[tuple[str, int], ...]:
    """The `k` most frequent current categories the reference never saw, with their counts (ties by name), so a
    new category is named, not only counted in `(other)` (churn tryout: a new plan `unlimited-5g` took 20 % of the
    window and the readout said only `(other)` 0.199). The per-bucket overflow category is no value and is left out."""
    cats = categories_of(fh)
    new = sorted(((c, cats[c]) for c in cats.keys() - p.seen if c != CATEGORY_OVERFLOW), key=lambda kv: (-kv[1], kv[0]))
    return tuple(new[:k])


def numeric_profile(name: str, s: FineSample, n_bins: int, grid: str = GRID_FEATURE,
                    settings: ProfileSettings = ProfileSettings()) -> NumericProfile:
    """Numeric reference profile: quantile cuts on the fine grid and the Wasserstein noise coefficient."""
    rng = np.random.default_rng([settings.seed, zlib.crc32(name.encode())])
    w_noise = bridge_l1_quantile(s.counts, grid_mids(grid, s.idx), settings.floor_draws, rng)
    return NumericProfile(name, grid, quantile_cuts(s.idx, s.counts, n_bins), s, w_noise)


def categorical_profile(name: str, fh: FeatureHist, top_k: int, max_seen: int) -> CategoricalProfile:
    """Categorical reference profile: the top_k categories by count (ties by name), other and missing."""
    cats = categories_of(fh)
    ranked = sorted(cats.items(), key=lambda kv: (-kv[1], kv[0]))
    top = tuple(c for c, _ in ranked[:top_k])
    counts = np.array([cats[c] for c in top] + [sum(v for _, v in ranked[top_k:]), fh.missing], dtype=np.int64)
    seen = frozenset(c for c, _ in ranked[:max_seen])
    return CategoricalProfile(name, top, counts, seen, len(ranked) > max_seen, len(ranked))


def infer_kind(fh: FeatureHist) -> str | None:
    """numeric when numeric values are at least half of the non-missing values; None when none."""
    n_num, n_cat = sum(fh.num.values()), sum(fh.cat.values())
    if n_num + n_cat == 0:
        return None
    return NUMERIC if n_num >= n_cat else CATEGORICAL


@dataclass(frozen=True, slots=True, eq=False)
class Profile:
    """A reference: per-feature profiles, the score profile, reference prevalence counts, dropped features."""

    features: tuple[FeatureProfile, ...]
    score: NumericProfile | None
    positives: int
    labelled: int
    n: int
    dropped: tuple[tuple[str, str], ...] = ()
    settings: ProfileSettings = field(default_factory=ProfileSettings)
    score_labels: np.ndarray | None = None
    """Labelled fine score histograms, rows (negative, positive), for the calibration map of label-free
    estimates (analysis.calibrated); None in references stored before they were kept."""
    score_labels_by_variant: Mapping[str, np.ndarray] | None = None
    """The same per variant (references built from stored buckets): variants' score-label relations differ."""

    @property
    def prevalence(self) -> float | None:
        return self.positives / self.labelled if self.labelled else None

    def feature(self, name: str) -> FeatureProfile | None:
        """The profile of one feature, None when it is not tracked."""
        for f in self.features:
            if f.feature == name:
                return f
        return None

    def to_json(self) -> dict[str, object]:
        """Plain-JSON form (store it versioned); from_json(to_json()) rebuilds an identical profile."""
        return {"version": PROFILE_VERSION, "n": self.n, "settings": self.settings.to_json(),
                "features": [f.to_json() for f in self.features],
                "score": None if self.score is None else self.score.to_json(),
                "prevalence": {"k": self.positives, "n": self.labelled, "value": self.prevalence},
                "dropped": [{"feature": f, "reason": r} for f, r in self.dropped],
                "score_labels": None if self.score_labels is None else sparse_rows(self.score_labels),
                "score_labels_by_variant": None if self.score_labels_by_variant is None else {
                    v: sparse_rows(h) for v, h in self.score_labels_by_variant.items()}}

    @classmethod
    def from_json(cls, d: Mapping[str, object]) -> Profile:
        """Inverse of to_json (derived fields such as edges and value are recomputed)."""
        if d.get("version") != PROFILE_VERSION:
            raise ValueError(f"unsupported profile version {d.get('version')!r}")
        feats: list[FeatureProfile] = []
        for f in d["features"]:  # type: ignore[attr-defined]
            feats.append(NumericProfile.from_json(f) if f["kind"] == NUMERIC else CategoricalProfile.from_json(f))
        sc = d.get("score")
        prev = d["prevalence"]
        return cls(tuple(feats), None if sc is None else NumericProfile.from_json(sc),  # type: ignore[arg-type]
                   int(prev["k"]), int(prev["n"]), int(d["n"]),  # type: ignore[index]
                   tuple((x["feature"], x["reason"]) for x in d.get("dropped", [])),  # type: ignore[attr-defined]
                   ProfileSettings(**d.get("settings", {})),  # type: ignore[arg-type]
                   dense_rows(d.get("score_labels")),  # type: ignore[arg-type]
                   None if d.get("score_labels_by_variant") is None else {  # type: ignore[union-attr]
                       v: dense_rows(r) for v, r in d["score_labels_by_variant"].items()})  # type: ignore[attr-defined]


def build_profile(features: Mapping[str, FeatureHist], score_hist: np.ndarray | None = None,
                  conf: np.ndarray | None = None, settings: ProfileSettings = ProfileSettings(),
                  declared: Mapping[str, str] | None = None) -> Profile:
    """Reference profile from a merged window (features, fine score histogram, conf counts).

    Declared features (name → "numeric"/"categorical") are always tracked; the others are inferred
    (numeric when at least half their non-missing values are numbers; booleans arrive as strings,
    so they are categorical) and the most populated ones are kept up to settings.max_features.
    Dropped features are listed with a reason: "no_values" or "over_limit".
    """
    declared = dict(declared or {})
    if conf is not None:  # a prediction without the key is missing for every tracked feature (issue 15.2)
        n_pred = int(np.asarray(conf).sum())
        features = {k: absent_as_missing(fh, n_pred) or fh for k, fh in features.items()}
    dropped: list[tuple[str, str]] = []
    chosen: list[tuple[str, str]] = []
    for name, kind in declared.items():
        fh = features.get(name)
        if kind not in (NUMERIC, CATEGORICAL):
            raise ValueError(f"feature {name!r}: kind must be numeric or categorical, not {kind!r}")
        if fh is None or (kind == NUMERIC and not any(fh.num.values())) or infer_kind(fh) is None:
            dropped.append((name, "no_values"))
        else:
            chosen.append((name, kind))
    inferred: list[tuple[int, str, str]] = []
    for name, fh in features.items():
        if name in declared:
            continue
        kind = infer_kind(fh)
        if kind is None:
            dropped.append((name, "no_values"))
        else:
            inferred.append((-(fh.total - fh.missing), name, kind))
    inferred.sort()
    room = max(settings.max_features - len(chosen), 0)
    chosen += [(name, kind) for _, name, kind in inferred[:room]]
    dropped += [(name, "over_limit") for _, name, _ in inferred[room:]]
    profs: list[FeatureProfile] = []
    for name, kind in chosen:
        fh = features[name]
        if kind == NUMERIC:
            profs.append(numeric_profile(name, fine_sample(fh), settings.numeric_bins, GRID_FEATURE, settings))
        else:
            profs.append(categorical_profile(name, fh, settings.top_k, settings.max_seen))
    ss = score_sample(score_hist)
    score = numeric_profile(SCORE_NAME, ss, settings.score_bins, GRID_SCORE, settings) if ss.n_numeric else None
    c = np.zeros((3, 2), np.int64) if conf is None else np.asarray(conf, dtype=np.int64)
    pos, neg = int(c[POS].sum()), int(c[NEG].sum())
    n = int(c.sum()) if conf is not None else (ss.total if ss.n_numeric else max((f.n for f in profs), default=0))
    labelled = None
    if score_hist is not None and np.ndim(score_hist) == 2:
        labelled = np.asarray(score_hist, np.int64)[[NEG, POS]].copy()
    return Profile(tuple(profs), score, pos, pos + neg, n, tuple(sorted(dropped)), settings, labelled)


def build_profile_from_stats(stats: BucketStats, settings: ProfileSettings = ProfileSettings(),
                             declared: Mapping[str, str] | None = None) -> Profile:
    """Reference profile from a merged window's BucketStats (score histogram summed over label states)."""
    return build_profile(stats.features, stats.hist, stats.conf, settings, declared)
