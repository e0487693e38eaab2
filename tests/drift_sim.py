"""Calm (no-drift) and drifted feature windows for the drift false-alarm simulations (tests and benchmarks).

K features cycling through eight kinds seen in practice: a skewed amount with 2 % missing, an hour of day
(integers), a count (Poisson), a normal balance, a gamma account age, a Zipf-like country (28 categories), a
boolean with 5 % missing and a 4-valued channel with a rare value. Each window is binned as the engine bins
it (fine feature grid, categories by name), so drift_report sees exactly what the service would.
"""

from __future__ import annotations

import numpy as np

from driftline.core.grids import N_SCORE_BINS, feature_bin, score_bin
from driftline.core.stats import NEG, POS, FeatureHist

COUNTRIES = np.array(["FR", "DE", "ES", "IT", "GB", "US", "NL", "BE", "PL", "PT", "SE", "AT", "CH", "IE",
                      "DK", "NO", "FI", "CZ", "GR", "HU", "RO", "BG", "HR", "SK", "SI", "LT", "LV", "EE"])
CHANNELS = np.array(["web", "app", "pos", "atm"])
KINDS = ("amount", "hour", "n_tx", "balance", "age_days", "country", "card_present", "channel")


def num_hist(values: np.ndarray, missing: int = 0) -> FeatureHist:
    idx, cnt = np.unique(feature_bin(values), return_counts=True)
    return FeatureHist(dict(zip(idx.tolist(), cnt.tolist())), {}, int(missing))


def cat_hist(labels: np.ndarray, codes: np.ndarray, missing: int = 0) -> FeatureHist:
    cnt = np.bincount(codes, minlength=len(labels))
    return FeatureHist({}, {str(labels[i]): int(c) for i, c in enumerate(cnt) if c}, int(missing))


def country_weights(shift: float = 0.0) -> np.ndarray:
    """Zipf-like country shares; `shift` moves mass from the first country to the second."""
    w = 1.0 / np.arange(1, len(COUNTRIES) + 1) ** 1.2
    w /= w.sum()
    w[0] -= shift
    w[1] += shift
    return w


def feature(rng: np.random.Generator, kind: str, n: int, amount_scale: float = 1.0, country_shift: float = 0.0,
            missing: float = 0.02) -> FeatureHist:
    """One feature's histogram of n draws of its kind (the drift knobs act on amount and country)."""
    if kind == "amount":
        miss = rng.random(n) < missing
        return num_hist(rng.lognormal(3.5, 1.2, int((~miss).sum())) * amount_scale, int(miss.sum()))
    if kind == "hour":
        return num_hist(rng.integers(0, 24, n).astype(float))
    if kind == "n_tx":
        return num_hist(rng.poisson(3.0, n).astype(float))
    if kind == "balance":
        return num_hist(rng.normal(1000.0, 2500.0, n))
    if kind == "age_days":
        return num_hist(rng.gamma(2.0, 300.0, n))
    if kind == "country":
        return cat_hist(COUNTRIES, rng.choice(len(COUNTRIES), n, p=country_weights(country_shift)))
    if kind == "card_present":
        miss = rng.random(n) < 0.05
        return cat_hist(np.array(["false", "true"]), (rng.random(int((~miss).sum())) < 0.7).astype(np.int64),
                    int(miss.sum()))
    return cat_hist(CHANNELS, rng.choice(4, n, p=[0.4, 0.3, 0.25, 0.05]))


def window(rng: np.random.Generator, n: int, k: int, **drift: float) -> tuple[dict[str, FeatureHist], np.ndarray,
                                                                                np.ndarray]:
    """k features (names kind_i), the fine score histogram and labelled conf counts of n predictions."""
    feats = {f"{KINDS[i % len(KINDS)]}_{i}": feature(rng, KINDS[i % len(KINDS)], n, **drift) for i in range(k)}
    score = 1.0 / (1.0 + np.exp(-rng.normal(-3.0, 1.5, n)))
    y = rng.random(n) < score
    conf = np.zeros((3, 2), np.int64)
    conf[POS, 0], conf[NEG, 0] = int(y.sum()), n - int(y.sum())
    return feats, np.bincount(score_bin(score), minlength=N_SCORE_BINS), conf
