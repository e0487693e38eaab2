"""The documented upper bound on the number of series `/metrics` can hold (README, Label cardinality).

series ≤ W·M·(G·(1 + (V+1)(R+1)) + PER_MODEL_WINDOW + 3F) + T·(4 + S) + (3M + 1) + PIPELINE_SERIES
         + PROCESS_SERIES + P + 4·N
W windows exported, M models, V variants and R versions per model (+1: `__other__`), G series per group,
PER_MODEL_WINDOW series per model and window (score PSI, seasonal fallback count, label-free estimates,
multivariate drift, why a readout is absent), F drift features (per model the reference's seasonality info), T triggers with S states,
P consumer partitions, N notification receivers.
"""

from __future__ import annotations

from ..config import Config
from ..core.events import ALL_REASONS
from ..ops import BATCH_BUCKETS
from ..readouts.absent import READOUTS
from ..triggers.model import STATES
from ..triggers.runner import compile_rules
from .collector import windows_of
from .names import (COUNT_HELP, ESTIMATED_RATES, LABEL_SERIES, MULTIVARIATE_SERIES, RANKING_EXTRA, RATE_HELP,
                    SCORE_HELP)

DEAD_LETTER_REASONS = frozenset(ALL_REASONS)
PER_GROUP = 3 * len(RATE_HELP) + len(COUNT_HELP) + len(SCORE_HELP) + len(RANKING_EXTRA) + 3
"""Windowed series of one (variant, model_version) group: rates with both bounds, counts, scores, the ranking
metrics' interval and computation bounds, 2 label-delay quantiles and their count (tests/test_cardinality.py
counts them in a scrape)."""
PER_MODEL_WINDOW = 2 + 3 * len(ESTIMATED_RATES) + 2 + len(MULTIVARIATE_SERIES) + len(READOUTS)
"""Series of one (model, window) besides its groups and features: score PSI, seasonal fallback count, the label-free
estimates with their bounds, trusted, contradicted, the multivariate drift series, and one
driftline_readout_unavailable per readout (one reason at a time)."""
PIPELINE_SERIES = 1 + 1 + 2 + 2 + 2 + 1 + len(DEAD_LETTER_REASONS) + 1 + LABEL_SERIES + 2 + 1 + 1
"""database up, build_info, time basis, leader, events and duplicates per type, conflicting duplicates (predictions),
dead letters per reason, expired, label arrival (corrections, stale outcomes, implicit negatives, and those
relabelled by label), newest event per type, pending outcomes, join-store size."""
PROCESS_SERIES = len(BATCH_BUCKETS) + 4
"""The batch-duration histogram of the process (buckets, +Inf, count, sum, created)."""


def series_bound(config: Config, partitions: int = 0, receivers: int = 0) -> int:
    """The most series one scrape can return under `config` (limits, features, triggers, windows)."""
    lim = config.limits
    m, v, r = lim.bound_models, lim.bound_values("variants"), lim.bound_values("versions")
    f = max(config.max_features, len(config.features))
    rules = compile_rules(config.triggers)
    w = len(windows_of(config, rules))
    return (w * m * (PER_GROUP * (1 + (v + 1) * (r + 1)) + PER_MODEL_WINDOW + 3 * f) + len(rules) * (4 + len(STATES))
            + 3 * m + 1 + PIPELINE_SERIES + PROCESS_SERIES + partitions + 4 * receivers)
