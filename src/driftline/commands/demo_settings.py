"""The demo's settings: driftline.example.yaml's triggers, features, costs and words, and the span's end."""

from __future__ import annotations

from typing import Any

import msgspec

from ..config import Config, Trigger
from ..domain import Costs, Domain
from ..reports.weeks import week_of

EXAMPLE_TRIGGERS: list[dict[str, Any]] = [
    {"name": "recall_below_target", "metric": "recall", "op": "<", "value": 0.70, "window": "7d", "min_n": 30,
     "mode": "point", "severity": "critical", "for": "15m", "cooldown": "1h", "hysteresis": 0.0,
     "description": "Fewer frauds caught than agreed; fraud losses grow (€400 per missed fraud)."},
    {"name": "fpr_above_target", "metric": "fpr", "op": ">", "value": 0.08, "window": "7d", "min_n": 30,
     "mode": "point", "severity": "warning", "for": "15m", "cooldown": "1h", "hysteresis": 0.0,
     "description": "More genuine customers flagged than agreed; review hours and complaints grow."},
]
"""The review triggers of driftline.example.yaml (seed 000 step 8: recall < 70 %, FPR > 8 %, weekly)."""
EXAMPLE_FEATURES = {"amount": "numeric", "country": "categorical", "channel": "categorical",
                    "card_present": "categorical", "merchant_category": "categorical", "hour": "numeric",
                    "account_age_days": "numeric", "tx_count_24h": "numeric", "distance_km": "numeric"}
EXAMPLE_SLICES = ["country", "channel"]
EXAMPLE_BASELINE = {"baseline_name": "rules engine", "baseline_flagged": 10_000, "baseline_caught": 1_200}
EXAMPLE_COSTS: dict[str, Any] = {"currency": "EUR", "missed_positive": 400.0, "review_per_flag": 5.0,
                                 "review_minutes": 10.0, "complaint_rate": 0.05, "model_per_prediction": 0.002,
                                 "monthly_volume": 100_000, **EXAMPLE_BASELINE}
"""driftline.example.yaml's `costs:` (seed 000: €400 per missed fraud, €5 and 10 minutes per review, ...)."""
EXAMPLE_DOMAIN = {"positives": "frauds", "negatives": "genuine transactions", "predictions": "transactions",
                  "flagged": "transactions flagged for review", "missed_cost": "fraud lost",
                  "review_hours": "analyst hours"}
"""driftline.example.yaml's `domain:` words (the demo simulates the fraud example)."""


# --- settings ----------------------------------------------------------------------------------------------
def demo_config(config: Config) -> tuple[Config, list[str]]:
    """The config with driftline.example.yaml's triggers, features, slices, costs (or only the baseline) and
    domain words filled in where it has none, and what was filled in."""
    notes: list[str] = []
    changes: dict[str, Any] = {}
    if not config.triggers:
        changes["triggers"] = [msgspec.convert(t, Trigger) for t in EXAMPLE_TRIGGERS]
        notes.append("triggers recall < 0.70 (critical) and fpr > 0.08 (warning) over 7d, min n 30")
    if not config.features:
        changes["features"] = dict(EXAMPLE_FEATURES)
        notes.append(f"{len(EXAMPLE_FEATURES)} declared features")
    if not config.slices:
        changes["slices"] = list(EXAMPLE_SLICES)
        notes.append("slices by country and channel")
    if config.costs is None:
        changes["costs"] = msgspec.convert(EXAMPLE_COSTS, Costs)
        notes.append("costs: €400 per missed fraud, €5 and 10 minutes per review, 100,000 transactions a month; "
                     "baseline the rules engine (10,000 flags and 1,200 frauds caught a month)")
    elif config.costs.baseline_flagged is None:
        changes["costs"] = msgspec.structs.replace(config.costs, **EXAMPLE_BASELINE)
        notes.append("baseline: the rules engine (10,000 flags and 1,200 frauds caught a month)")
    if config.domain == Domain():
        changes["domain"] = msgspec.convert(EXAMPLE_DOMAIN, Domain)
        notes.append("fraud wording (frauds, genuine transactions, transactions flagged for review)")
    return (msgspec.structs.replace(config, **changes) if changes else config), notes


def demo_end(now: float) -> float:
    """Monday 00:00 UTC of the current ISO week: the four simulated weeks are then whole ISO weeks."""
    return week_of(now).start
