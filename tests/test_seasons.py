"""Seasonal references, pure parts: the season of a bucket (against datetime), the season-weighted mixture
(against a direct dense numpy computation), and the drift statistics on a mixed reference (against scipy)."""

from __future__ import annotations

import math
from datetime import datetime, timezone

import numpy as np
import pytest
from scipy.stats import chi2_contingency, ks_2samp

from driftline.analysis.drift import drift_report
from driftline.analysis.profiles import NumericProfile, build_profile
from driftline.analysis.season_mix import THIN, UNPLACED, mix_profile
from driftline.analysis.seasons import (
    BOTH, DAY_OF_WEEK, HOUR_OF_DAY, SeasonalSlices, check_seasonality, season_label, season_of, slice_from_stats,
)
from driftline.core.stats import NEG, POS, BucketStats, FeatureHist

RNG_SEED = 20261201


def test_season_of_matches_datetime_in_utc() -> None:
    rng = np.random.default_rng(RNG_SEED)
    for ts in rng.integers(0, 2_000_000_000 // 900, 500) * 900:
        d = datetime.fromtimestamp(int(ts), tz=timezone.utc)
        assert season_of(float(ts), 900, HOUR_OF_DAY) == d.hour
        assert season_of(float(ts), 900, DAY_OF_WEEK) == d.weekday()
        assert season_of(float(ts), 900, BOTH) == d.weekday() * 24 + d.hour
    monday = datetime(2026, 11, 16, tzinfo=timezone.utc).timestamp()
    assert season_of(monday, 86400, HOUR_OF_DAY) is None  # a compacted day row spans 24 hours
    assert season_of(monday, 86400, DAY_OF_WEEK) == 0
    assert season_label(25, BOTH) == "Tue 01:00" and season_label(7, HOUR_OF_DAY) == "07:00"
    with pytest.raises(ValueError, match="drift.seasonality: 'hourly' is not one of"):
        check_seasonality("hourly", "drift.seasonality")


def _stats(rng: np.random.Generator, n: int, shift: float = 0.0, n_fine: int = 40) -> BucketStats:
    """Random bucket statistics: a numeric feature on fine bins, a categorical one, a score, labels."""
    s = BucketStats()
    fine = rng.multinomial(n, np.exp(-0.5 * ((np.arange(n_fine) - n_fine / 2 - shift * 5) / 6) ** 2)
                           / np.exp(-0.5 * ((np.arange(n_fine) - n_fine / 2 - shift * 5) / 6) ** 2).sum())
    missing = int(rng.integers(0, n // 10 + 1))
    keep = fine.copy()
    for _ in range(missing):  # move some values to missing
        nz = np.flatnonzero(keep)
        keep[rng.choice(nz)] -= 1
    s.features["x"] = FeatureHist(num={500 + i: int(c) for i, c in enumerate(keep) if c}, missing=missing)
    p = np.array([0.5 - shift * 0.1, 0.3, 0.15 + shift * 0.1, 0.05])
    cats = rng.multinomial(n, p / p.sum())
    s.features["c"] = FeatureHist(cat={k: int(v) for k, v in zip("abcd", cats) if v})
    scores = rng.multinomial(n, np.full(50, 1 / 50))
    s.hist[NEG, :50] = scores
    pos = int(rng.binomial(n, 0.05 + 0.02 * shift))
    s.conf[POS, 1] = pos
    s.conf[NEG, 0] = n - pos
    return s


@pytest.fixture(scope="module")
def seasons():
    rng = np.random.default_rng(RNG_SEED)
    per = {h: _stats(rng, int(rng.integers(150, 900)), shift=np.sin(h / 24 * 2 * np.pi)) for h in range(24)}
    whole = BucketStats()
    for s in per.values():
        whole.add(s)
    profile = build_profile(whole.features, whole.hist, whole.conf, declared={"x": "numeric", "c": "categorical"})
    slices = SeasonalSlices(HOUR_OF_DAY, {h: slice_from_stats(profile, s, 14) for h, s in per.items()})
    return profile, slices, per, whole


def _dense_x(s: BucketStats, lo: int = 400, hi: int = 700) -> np.ndarray:
    """[fine counts of x on lo..hi−1, other, missing] as a dense vector."""
    v = np.zeros(hi - lo + 2)
    for i, c in s.features["x"].num.items():
        v[i - lo] += c
    v[-1] = s.features["x"].missing
    return v


def _direct(vectors: list[np.ndarray], weights: list[float]) -> np.ndarray:
    """Σ a_j p_j · n_eff, n_eff = 1/Σ a_j²/n_j, as integers summing to round(n_eff) (largest remainders): the
    documented mixture, computed densely with Python's sort."""
    a = np.asarray(weights, dtype=float) / np.sum(weights)
    n = np.array([v.sum() for v in vectors])
    p = np.sum([a_j * v / v.sum() for a_j, v in zip(a, vectors)], axis=0)
    n_eff = 1.0 / np.sum(a**2 / n)
    x = p * n_eff
    out = [math.floor(v + 1e-9) for v in x]
    order = sorted(range(len(x)), key=lambda i: (-(x[i] - out[i]), i))
    for i in order[:round(n_eff) - sum(out)]:
        out[i] += 1
    return np.array(out)


def test_mixture_equals_a_direct_numpy_computation(seasons) -> None:
    profile, slices, per, _ = seasons
    rng = np.random.default_rng(RNG_SEED + 1)
    hours = sorted(rng.choice(24, 5, replace=False).tolist())
    counts = {h: int(rng.integers(20, 300)) for h in hours}
    mix = mix_profile(profile, slices, counts, min_n=1).profile
    cat = next(f for f in profile.features if f.feature == "c")
    cat_vectors = [np.array([per[h].features["c"].cat.get(k, 0) for k in cat.categories] + [0, 0]) for h in hours]
    assert mix.feature("c").counts.tolist() == _direct(cat_vectors, [counts[h] for h in hours]).tolist()
    x = mix.feature("x")
    assert isinstance(x, NumericProfile) and np.array_equal(x.cuts, profile.feature("x").cuts)
    got = np.zeros(302)
    got[x.fine.idx - 400] = x.fine.counts
    got[-1] = x.fine.missing
    want = _direct([_dense_x(per[h]) for h in hours], [counts[h] for h in hours])
    assert got.tolist() == want.tolist()
    prev = _direct([np.array([per[h].conf[POS].sum(), per[h].conf[NEG].sum()]) for h in hours],
                   [counts[h] for h in hours])
    assert (mix.positives, mix.labelled - mix.positives) == (int(prev[0]), int(prev[1]))


def test_one_season_window_gets_exactly_its_slice(seasons) -> None:
    profile, slices, per, _ = seasons
    mix = mix_profile(profile, slices, {7: 123}, min_n=1)
    x = mix.profile.feature("x")
    assert dict(zip(x.fine.idx.tolist(), x.fine.counts.tolist())) == per[7].features["x"].num
    assert mix.profile.n == mix.n_effective == per[7].predictions
    assert [u.to_json() for u in mix.uses] == [{"season": "07:00", "window_n": 123, "reference_hours": 14,
                                                "reference_n": per[7].predictions, "fallback": None}]


def test_thin_and_unplaced_seasons_share_one_whole_reference_component(seasons) -> None:
    profile, slices, per, whole = seasons
    thin = min(per, key=lambda h: per[h].predictions)
    big = max(per, key=lambda h: per[h].predictions)
    min_n = per[thin].predictions + 1
    counts = {thin: 40, big: 100, None: 60}
    mix = mix_profile(profile, slices, counts, min_n=min_n)
    assert {u.label: u.fallback for u in mix.uses} == {season_label(thin, HOUR_OF_DAY): THIN,
                                                       season_label(big, HOUR_OF_DAY): None, "unplaced": UNPLACED}
    cat = profile.feature("c")
    vec = lambda s: np.array([s.features["c"].cat.get(k, 0) for k in cat.categories] + [0, 0])  # noqa: E731
    want = _direct([vec(per[big]), vec(whole)], [100, 40 + 60])
    assert mix.profile.feature("c").counts.tolist() == want.tolist()


def test_drift_statistics_on_a_mixed_reference_equal_scipy(seasons) -> None:
    profile, slices, per, _ = seasons
    rng = np.random.default_rng(RNG_SEED + 2)
    counts = {3: 400, 4: 350}
    mix = mix_profile(profile, slices, counts, min_n=1).profile
    cur = _stats(rng, 750, shift=0.3)
    res = drift_report(mix, cur.features, cur.hist, cur.conf)
    c = next(f for f in res.features if f.feature == "c")
    table = np.array([c.ref_counts, c.cur_counts])
    table = table[:, table.sum(axis=0) > 0]
    ref = chi2_contingency(table, correction=False)
    assert c.chi2.stat == pytest.approx(ref.statistic, rel=1e-12) and c.chi2.p_value == pytest.approx(ref.pvalue)
    x = next(f for f in res.features if f.feature == "x")
    mx = mix.feature("x").fine
    cur_num = cur.features["x"].num
    cur_idx = np.array(sorted(cur_num))
    ks = ks_2samp(np.repeat(mx.idx, mx.counts), np.repeat(cur_idx, [cur_num[i] for i in cur_idx]))
    assert x.ks.stat == pytest.approx(ks.statistic, abs=1e-12)
    assert x.n_reference == sum(x.ref_counts) == mix.feature("x").fine.total


def test_mixed_counts_add_up_to_the_effective_size(seasons) -> None:
    """`drift --json` printed n_reference 438 (the sum of counts rounded bin by bin) beside reference_n_effective 437
    for a seasonal reference: every mixed count vector now sums to round(n_eff), each count within 1 of p·n_eff."""
    profile, slices, per, _ = seasons
    rng = np.random.default_rng(RNG_SEED + 3)
    for _ in range(40):
        hours = sorted(rng.choice(24, int(rng.integers(2, 8)), replace=False).tolist())
        mix = mix_profile(profile, slices, {h: int(rng.integers(5, 400)) for h in hours}, min_n=1)
        cur = _stats(rng, 300)
        res = drift_report(mix.profile, cur.features, cur.hist, cur.conf)
        for f in [*res.features, res.score]:
            assert f.n_reference == mix.n_effective, f.feature


def test_slices_round_trip_through_json(seasons) -> None:
    _, slices, _, _ = seasons
    back = SeasonalSlices.from_json(slices.to_json())
    assert back.to_json() == slices.to_json() and back.summary()[0] == {"season": "00:00", "hours": 14,
                                                                         "n": slices.slices[0].n}
