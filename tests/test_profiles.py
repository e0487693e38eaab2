"""Reference profiles: quantile cuts on the fine grid, exact re-binning, kind inference, JSON round trip."""

from __future__ import annotations

import json

import numpy as np
import pytest

from driftline.core.grids import N_SCORE_BINS, feature_bin, score_bin
from driftline.core.stats import NEG, POS, UNL, BucketStats, FeatureHist
from driftline.analysis.drift import drift_report
from driftline.analysis.fine_grid import fine_sample, grid_edges
from driftline.analysis.profiles import (
    CATEGORICAL, MISSING, NUMERIC, OTHER, OVERFLOW, UNDERFLOW, CategoricalProfile, NumericProfile, Profile, ProfileSettings, build_profile, build_profile_from_stats, rebin, unseen_count,
)


def numeric_hist(values: np.ndarray, missing: int = 0, cats: dict[str, int] | None = None) -> FeatureHist:
    idx, cnt = np.unique(feature_bin(values), return_counts=True)
    return FeatureHist(dict(zip(idx.tolist(), cnt.tolist())), dict(cats or {}), missing)


def cat_hist(values: np.ndarray, missing: int = 0) -> FeatureHist:
    u, c = np.unique(values, return_counts=True)
    return FeatureHist({}, dict(zip(u.tolist(), c.tolist())), missing)


def test_quantile_cuts_give_roughly_equal_reference_mass() -> None:
    rng = np.random.default_rng(1)
    x = rng.lognormal(3.5, 1.2, 100_000)
    prof = build_profile({"amount": numeric_hist(x)}).feature("amount")
    assert isinstance(prof, NumericProfile)
    counts = prof.ref_counts
    assert counts[0] == 0 and counts[-3] == 0 and counts[-2] == 0 and counts[-1] == 0  # under/over/other/missing
    inner = counts[1:-3]
    assert len(inner) == 10
    fine_max = prof.fine.counts.max()
    # each bin is within one fine bin's mass (plus rounding) of a tenth of the data
    assert np.all(np.abs(inner - 10_000) <= fine_max), inner
    # the frozen edges are fine-grid edges and sit near the raw quantiles
    edges = grid_edges("feature", prof.cuts)
    q = np.quantile(x, np.arange(1, 10) / 10)
    assert np.all(np.abs(np.log(edges[1:-1] / q)) < 0.05)
    assert prof.labels[0] == UNDERFLOW and prof.labels[-3:] == (OVERFLOW, OTHER, MISSING)


def test_heavy_atom_merges_cuts_without_empty_bins() -> None:
    rng = np.random.default_rng(2)
    x = np.where(rng.random(10_000) < 0.5, 0.0, rng.exponential(50.0, 10_000))
    prof = build_profile({"x": numeric_hist(x)}).feature("x")
    assert isinstance(prof, NumericProfile)
    inner = prof.ref_counts[1:-3]
    assert 5 <= len(inner) < 10 and inner.min() > 0
    assert inner[0] == np.sum(x == 0.0)  # the atom at 0 is one bin on its own


def test_rebin_numeric_is_exact() -> None:
    rng = np.random.default_rng(3)
    prof = build_profile({"x": numeric_hist(rng.normal(100, 30, 5_000))}).feature("x")
    assert isinstance(prof, NumericProfile)
    cur_vals = rng.normal(120, 60, 7_000)  # wider: lands in underflow and overflow too
    fh = numeric_hist(cur_vals, missing=17, cats={"n/a": 5, "oops": 2})
    got = rebin(prof, fh)
    assert got.sum() == fh.total == 7_000 + 17 + 7
    fb = feature_bin(cur_vals)
    cuts = prof.cuts
    expected = [np.sum(fb < cuts[0])]
    expected += [np.sum((fb >= a) & (fb < b)) for a, b in zip(cuts[:-1], cuts[1:])]
    expected += [np.sum(fb >= cuts[-1]), 7, 17]
    assert got.tolist() == [int(e) for e in expected]
    assert got[0] > 0 and got[-3] > 0


def test_rebin_categorical_top_k_other_missing_and_unseen() -> None:
    ref = np.array(["FR"] * 50 + ["DE"] * 30 + ["ES"] * 10 + ["IT"] * 6 + ["PT"] * 4)
    fh_ref = cat_hist(ref, missing=8)
    prof = build_profile({"country": fh_ref}, settings=ProfileSettings(top_k=3)).feature("country")
    assert isinstance(prof, CategoricalProfile)
    assert prof.categories == ("FR", "DE", "ES")
    assert prof.counts.tolist() == [50, 30, 10, 10, 8]
    cur = cat_hist(np.array(["FR"] * 20 + ["IT"] * 5 + ["BR"] * 3 + ["US"] * 2), missing=4)
    got = rebin(prof, cur)
    assert got.tolist() == [20, 0, 0, 10, 4] and got.sum() == cur.total
    assert unseen_count(prof, cur) == (5, 30)  # BR and US never seen; IT was seen (in `other`)


def test_kind_inference_booleans_and_feature_bound() -> None:
    rng = np.random.default_rng(4)
    feats = {
        "amount": numeric_hist(rng.lognormal(3, 1, 1000), cats={"unknown": 10}),  # mostly numeric
        "card_present": cat_hist(np.array(["true"] * 700 + ["false"] * 280), missing=20),
        "zip": numeric_hist(rng.integers(1000, 9999, 100).astype(float), cats={"A1": 300}),  # mostly strings
        "rare": numeric_hist(rng.normal(0, 1, 50)),
        "empty": FeatureHist({}, {}, 1000),
    }
    p = build_profile(feats, settings=ProfileSettings(max_features=3))
    kinds = {f.feature: f.kind for f in p.features}
    assert kinds == {"amount": NUMERIC, "card_present": CATEGORICAL, "zip": CATEGORICAL}
    assert dict(p.dropped) == {"rare": "over_limit", "empty": "no_values"}
    # a declared feature is always tracked with its declared kind
    p2 = build_profile(feats, settings=ProfileSettings(max_features=3), declared={"rare": CATEGORICAL})
    assert {f.feature: f.kind for f in p2.features} == {"rare": CATEGORICAL, "amount": NUMERIC,
                                                         "card_present": CATEGORICAL}
    # numeric values of a categorical feature become value-range categories, never lost
    zip_prof = p.feature("zip")
    assert isinstance(zip_prof, CategoricalProfile) and zip_prof.n == 400
    # a numeric feature's string values are counted in its `other` bin
    amount = p.feature("amount")
    assert isinstance(amount, NumericProfile) and amount.ref_counts[-2] == 10


def _window(rng: np.random.Generator, n: int) -> BucketStats:
    b = BucketStats()
    s = rng.beta(0.6, 6.0, n)
    y = rng.random(n) < s
    lab = rng.random(n) < 0.8
    state = np.where(lab, np.where(y, POS, NEG), UNL)
    np.add.at(b.hist, (state, score_bin(s)), 1)
    np.add.at(b.conf, (state, (s >= 0.5).astype(int)), 1)
    b.features["amount"] = numeric_hist(rng.lognormal(3, 1, n), missing=3)
    b.features["channel"] = cat_hist(rng.choice(["web", "app", "pos"], n))
    return b


def test_score_and_prevalence_profile() -> None:
    b = _window(np.random.default_rng(5), 20_000)
    p = build_profile(b.features, b.hist, b.conf)
    assert p.n == 20_000
    assert p.positives == b.conf[POS].sum() and p.labelled == b.conf[POS].sum() + b.conf[NEG].sum()
    assert p.prevalence == pytest.approx(p.positives / p.labelled)
    assert p.score is not None and p.score.grid == "score"
    sc = p.score.ref_counts
    assert sc.sum() == 20_000 and len(sc) == 10 + 4
    assert np.all(np.abs(sc[1:-3] - 2_000) <= p.score.fine.counts.max())
    assert np.all((grid_edges("score", p.score.cuts) >= 0) & (grid_edges("score", p.score.cuts) <= 1))
    assert len(fine_sample(b.features["amount"]).idx) == len(b.features["amount"].num)
    assert p.score.fine.counts.sum() == b.hist.sum() and len(b.hist[0]) == N_SCORE_BINS
    assert build_profile_from_stats(b).to_json() == p.to_json()


def test_profile_json_round_trip() -> None:
    rng = np.random.default_rng(6)
    ref = _window(rng, 5_000)
    ref.features["country"] = cat_hist(rng.choice(["FR", "DE", "ES", "IT"], 5_000), missing=12)
    p = build_profile(ref.features, ref.hist, ref.conf, declared={"channel": CATEGORICAL})
    doc = json.loads(json.dumps(p.to_json()))
    back = Profile.from_json(doc)
    assert back.to_json() == p.to_json()
    cur = _window(rng, 3_000)
    a = drift_report(p, cur.features, cur.hist, cur.conf).to_json()
    b = drift_report(back, cur.features, cur.hist, cur.conf).to_json()
    assert a == b
    with pytest.raises(ValueError):
        Profile.from_json({**doc, "version": 99})
