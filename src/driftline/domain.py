"""The business side of the config: the domain's words and the unit costs, both optional.

Without them every output is domain-neutral ("positives caught", "flagged predictions") and says that costs are
not configured instead of showing money; driftline.example.yaml sets both for the fraud example (seed 000).
"""

from __future__ import annotations

from typing import Annotated

import msgspec

Word = Annotated[str, msgspec.Meta(min_length=1, max_length=60, pattern=r"^[^\x00-\x1f\x7f]+$")]
NonNeg = Annotated[float, msgspec.Meta(ge=0.0)]
Probability = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]


class _Section(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """Config sections reject unknown keys, so a typo fails at start instead of being ignored."""


class Domain(_Section):
    """What the model's cases are called (plural nouns, lower case); the defaults are domain-neutral."""

    positives: Word = "positives"
    """Positive cases, e.g. "frauds", "churners"."""
    negatives: Word = "negatives"
    """Negative cases, e.g. "genuine transactions"."""
    predictions: Word = "predictions"
    """What is scored, e.g. "transactions", "customers"."""
    flagged: Word = "flagged predictions"
    """Predictions at or above the threshold, e.g. "transactions flagged for review"."""
    missed_cost: Word = "cost of missed positives"
    """The money lost to positives not flagged, e.g. "fraud lost"."""
    review_hours: Word = "review hours"
    """Time spent reviewing flagged predictions, e.g. "analyst hours"."""


class Costs(_Section):
    """Unit costs of the decisions (seed 000): per missed positive, per review, complaints, model running cost.

    Optional: without a `costs:` section no money figure is shown. In it `currency` and `monthly_volume` are
    required (a money figure needs a currency; monthly KPIs need a volume); a unit cost not given is 0.
    """

    currency: Annotated[str, msgspec.Meta(min_length=1, max_length=10, pattern=r"^[^\x00-\x1f\x7f]+$")]
    monthly_volume: Annotated[int, msgspec.Meta(ge=1)]
    missed_positive: NonNeg = 0.0
    review_per_flag: NonNeg = 0.0
    review_minutes: NonNeg = 0.0
    complaint_rate: Probability = 0.0
    complaint_cost: NonNeg = 0.0
    model_per_prediction: NonNeg = 0.0
    baseline_name: Word | None = None
    baseline_flagged: Annotated[int, msgspec.Meta(ge=0)] | None = None
    baseline_caught: Annotated[int, msgspec.Meta(ge=0)] | None = None


COSTS_NOT_CONFIGURED = ("costs not configured; add a `costs:` section (currency, monthly_volume and unit costs) "
                        "to see money figures")
"""What every output says instead of a money figure when the config has no `costs:` section."""


def capitalised(text: str) -> str:
    """'transactions flagged for review' → 'Transactions flagged for review' (the rest unchanged)."""
    return text[:1].upper() + text[1:]
