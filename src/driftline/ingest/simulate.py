"""A realistic simulated fraud stream: 2 % prevalence, delayed labels, A/B variants, 8 mixed-type
features, and a scheduled drift after which the fraud pattern changes and recall falls.

Deterministic for a seed; events are yielded in event-time order (outcomes interleaved when due).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.events import iso

COUNTRIES = ["FR", "DE", "ES", "IT", "NL", "BE", "PT", "GB", "US", "PL"]
COUNTRY_P = np.array([0.35, 0.2, 0.12, 0.1, 0.06, 0.05, 0.04, 0.04, 0.02, 0.02])
DRIFT_COUNTRY_P = np.array([0.25, 0.15, 0.1, 0.08, 0.05, 0.04, 0.03, 0.1, 0.12, 0.08])
CHANNELS = ["pos", "web", "app"]
MCC = ["grocery", "fuel", "travel", "electronics", "restaurants", "fashion", "gaming", "other"]
DEFAULT_SEED = 7


def id_prefix(seed: int) -> str:
    """Prefix of a stream's prediction ids: `tx-` for the default seed (the demo's and the docs' ids, whose hashes
    pick the multivariate samples, stay as they were), `tx-s<seed>-` for any other, so streams of different seeds
    produced into one topic or database never share an id (a shared id would join one run's outcomes to the
    other's predictions, or drop them as duplicates). The same seed gives the same ids: re-running it is a replay
    of the same events."""
    return "tx-" if seed == DEFAULT_SEED else f"tx-s{seed}-"


@dataclass(frozen=True, slots=True)
class SimSpec:
    """What to simulate: span, volume, prevalence, variants, label delays and the drift."""

    start: float
    days: float = 28.0
    per_day: int = 5000
    prevalence: float = 0.02
    drift_day: float | None = 21.0
    variants: tuple[tuple[str, str, float], ...] = (("A", "v1", 0.5), ("B", "v2", 0.5))
    model: str = "fraud"
    seed: int = DEFAULT_SEED
    fraud_delay_days: float = 1.5
    genuine_delay_days: float = 2.0
    unlabelled_share: float = 0.03


_LATENT = {  # (genuine mean, fraud mean) of the score logit, before and after the drift
    "A": ((-2.0, 1.0), (-2.0, -0.3)),
    "B": ((-2.1, 1.3), (-2.1, 0.1)),
}


def _latent(variant: str) -> tuple[tuple[float, float], tuple[float, float]]:
    return _LATENT.get(variant, _LATENT["A"])


def _day_predictions(spec: SimSpec, rng: np.random.Generator, day: int, offset: int) -> list[dict[str, Any]]:
    n = int(rng.poisson(spec.per_day))
    t0 = spec.start + day * 86400.0
    ts = np.sort(t0 + rng.random(n) * 86400.0)
    ts = ts[ts < spec.start + spec.days * 86400.0]
    n = len(ts)
    drifted = spec.drift_day is not None and day >= spec.drift_day
    fraud = rng.random(n) < spec.prevalence
    arms = [v for v, _, _ in spec.variants]
    weights = np.array([w for _, _, w in spec.variants], dtype=float)
    arm_idx = rng.choice(len(arms), size=n, p=weights / weights.sum())
    noise = rng.normal(0.0, 1.2, n)
    amount = np.exp(np.where(fraud, rng.normal(4.5, 1.2, n), rng.normal(3.5, 1.0, n)))
    if drifted:
        amount *= 1.4
    country = rng.choice(len(COUNTRIES), size=n, p=DRIFT_COUNTRY_P if drifted else COUNTRY_P)
    channel = rng.choice(3, size=n, p=[0.5, 0.35, 0.15])
    card_present = (channel == 0) & (rng.random(n) < 0.9)
    mcc = rng.choice(len(MCC), size=n)
    hour = (np.mod(ts, 86400.0) // 3600.0).astype(int)  # the UTC hour of day of ts, whatever hour the span starts
    account_age = rng.gamma(2.0, 400.0, n).round()
    tx24 = rng.poisson(np.where(fraud, 6.0, 2.0))
    distance = np.where(rng.random(n) < 0.1, np.nan, rng.exponential(20.0, n))
    out: list[dict[str, Any]] = []
    prefix = id_prefix(spec.seed)
    for i in range(n):
        arm = arms[arm_idx[i]]
        before, after = _latent(arm)
        g_mu, f_mu = after if drifted else before
        logit = (f_mu if fraud[i] else g_mu) + noise[i]
        score = float(1.0 / (1.0 + np.exp(-logit)))
        out.append({
            "type": "prediction", "prediction_id": f"{prefix}{offset + i}", "model": spec.model,
            "model_version": spec.variants[arm_idx[i]][1], "variant": arm, "ts": iso(float(ts[i])),
            "score": round(score, 6),
            "features": {
                "amount": round(float(amount[i]), 2), "country": COUNTRIES[country[i]],
                "channel": CHANNELS[channel[i]], "card_present": bool(card_present[i]),
                "merchant_category": MCC[mcc[i]], "hour": int(hour[i]),
                "account_age_days": int(account_age[i]), "tx_count_24h": int(tx24[i]),
                "distance_km": None if np.isnan(distance[i]) else round(float(distance[i]), 1),
            },
            "_fraud": bool(fraud[i]), "_ts": float(ts[i]),
        })
    return out


def stream(spec: SimSpec, end: float | None = None) -> Iterator[dict[str, Any]]:
    """Events in event-time order up to `end` (default: everything, outcomes included)."""
    rng = np.random.default_rng(spec.seed)
    due: list[tuple[float, int, dict[str, Any]]] = []
    seq = 0
    offset = 0
    days = int(np.ceil(spec.days))
    limit = float("inf") if end is None else end
    for day in range(days):
        preds = _day_predictions(spec, rng, day, offset)
        offset += len(preds)
        delays = rng.exponential(1.0, len(preds))
        unlabelled = rng.random(len(preds)) < spec.unlabelled_share
        for p, d, skip in zip(preds, delays, unlabelled):
            while due and due[0][0] <= p["_ts"]:
                t, _, ev = heapq.heappop(due)
                if t < limit:
                    yield ev
            fraud, ts = p.pop("_fraud"), p.pop("_ts")
            if ts >= limit:
                return
            yield p
            if skip:
                continue
            mean_days = spec.fraud_delay_days if fraud else spec.genuine_delay_days
            t_out = ts + 600.0 + d * mean_days * 86400.0
            seq += 1
            heapq.heappush(due, (t_out, seq, {"type": "outcome", "prediction_id": p["prediction_id"],
                                              "label": int(fraud), "ts": iso(t_out)}))
    while due:
        t, _, ev = heapq.heappop(due)
        if t < limit:
            yield ev
