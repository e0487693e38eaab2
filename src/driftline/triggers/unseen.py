"""Triggers that name a feature or variant the data never had: such a trigger loads, then stays
insufficient_data forever (a typo like `variant: treatmnet`). Found at `alerts validate`, `alerts evaluate` and
service start, by comparing with the stored variants, `ab.arms`, `features:` and the active reference; likewise
a label-reading trigger whose window is shorter than the model's label delay (it never holds labels), or, under the
implicit-negative policy, a negative-reading one no longer than `labels.implicit_negative_after`."""

from __future__ import annotations

import math
from collections.abc import Sequence

from sqlalchemy import select

from ..config import Config
from ..readouts.references import load_reference
from ..storage import schema
from ..storage.store import Store
from ..readouts.headline import shared_id_note, shared_model_note
from .metrics import DRIFT, PIPELINE, canonical
from ..metric_names import READS_NEGATIVES
from .model import Rule

SHOWN = 10
"""Known names listed in a warning."""


def stored_variants(store: Store, model: str) -> set[str]:
    """Variants with stored predictions of a model."""
    b = schema.buckets.c
    with store.read() as conn:
        return {r[0] for r in conn.execute(select(b.variant).where(b.model == model).distinct())}


def _names(values: set[str]) -> str:
    shown = sorted(values)
    return ", ".join(repr(v) for v in shown[:SHOWN]) + (f" and {len(shown) - SHOWN} more" if len(shown) > SHOWN
                                                        else "") if shown else "none"


def unseen_names(store: Store, config: Config, model: str, rules: Sequence[Rule]) -> list[str]:
    """One line per trigger naming a variant or feature never seen for `model` (nothing while the model has no
    stored predictions: then every name is unseen and no typo can be told), or whose window holds no labels yet."""
    variants = stored_variants(store, model)
    if not variants:  # the label policy is known without data: its warnings stand
        return late_label_windows(store, config, model, rules)
    variants |= set(config.ab.arms)
    features = set(config.features) | set(config.slices)
    ref = load_reference(store, model)
    if ref is not None:
        features |= {f.feature for f in ref.profile().features}
    out = []
    for r in rules:
        if r.variant is not None and r.variant not in variants:
            out.append(f"trigger {r.name!r}: variant {r.variant!r} has no stored predictions of model {model!r} and "
                       f"is not under `ab.arms` (known: {_names(variants)}); it will stay insufficient_data")
        if r.feature is not None and canonical(r.metric) in DRIFT and r.feature not in features:
            where = "the active reference" if ref is not None else "`features:` (no reference is set)"
            out.append(f"trigger {r.name!r}: feature {r.feature!r} is not tracked by {where} of model {model!r} "
                       f"(known: {_names(features)}); it will stay insufficient_data")
    whole = [r.name for r in rules if r.variant is None and canonical(r.metric) not in PIPELINE]
    shared = shared_id_note(config.ab, store.counters(), model) if whole else None
    if shared:
        out.append(f"trigger{'s' if len(whole) > 1 else ''} {', '.join(repr(n) for n in whole)} (whole model): "
                   f"{shared}")
    labelled = [r.name for r in rules if canonical(r.metric) not in PIPELINE and canonical(r.metric) not in DRIFT]
    other_model = shared_model_note(store.counters(), model) if labelled else None
    if other_model:  # toxicity tryout: another model's outcomes judged these triggers, named by `replay` alone
        out.append(f"trigger{'s' if len(labelled) > 1 else ''} {', '.join(repr(n) for n in labelled)}: {other_model}")
    return out + late_label_windows(store, config, model, rules)


def late_label_windows(store: Store, config: Config, model: str, rules: Sequence[Rule]) -> list[str]:
    """One line per label-reading trigger whose window is no longer than the model's median label delay: judged
    over the newest window it holds few labels or none, so it stays insufficient_data or judges the early labels
    only (churn tryout: labels 30–60 d after prediction, `recall < 0.60 over 7d` read insufficient_data for ever,
    with nothing saying why). Nothing while fewer than 30 label delays are stored. Under the implicit-negative
    policy a negative-reading trigger no longer than `implicit_negative_after` gets immature_negatives instead."""
    from ..analysis.classification import delay_quantiles, delay_upper
    from ..analysis.rates import INDICATIVE_BELOW_N
    from ..durations import format_duration
    from ..numbers import duration
    from ..readouts.maturity import LABEL_FREE, implicit_too_early
    from ..storage.summaries import delay_histogram
    reading = [r for r in rules if canonical(r.metric) not in LABEL_FREE]
    if not reading:
        return []
    hist, _ = delay_histogram(store, model)
    known = int(hist.sum()) >= INDICATIVE_BELOW_N
    q = delay_quantiles(hist) if known else {"p50": None, "p95": None}
    p50, p95, upper = q["p50"], q["p95"], delay_upper(hist) if known else None
    implicit = config.labels.implicit_after_s
    out = [w for w in (implicit_too_early(config, hist, model),) if w]
    for r in reading:
        if implicit is not None and canonical(r.metric) in READS_NEGATIVES and r.window_s <= implicit:
            out.append(immature_negatives(r, model, implicit, upper))
            continue
        if p50 is None or p95 is None or upper is None or p50 < r.window_s:
            continue
        days = math.ceil((upper + r.window_s) / 86400.0)
        out.append(f"trigger {r.name!r}: {r.metric} over the newest {format_duration(r.window_s)} needs labels, but "
                   f"labels of model {model!r} arrive {duration(p50)} after the prediction (median; 95th percentile "
                   f"{duration(p95)}), so its window holds few or none: it stays insufficient_data or judges the "
                   f"early labels only. A window longer than the label delay (`window: {days}d`) holds the "
                   f"labelled predictions; `driftline metrics --matured` reads a window whose labels have arrived")
    return out


def immature_negatives(rule: Rule, model: str, implicit_s: float, delay_upper_s: float | None) -> str:
    """The warning for a negative-reading trigger whose window is no longer than `labels.implicit_negative_after`:
    no prediction in its newest window has become an implicit negative yet, so it reads the explicit negatives
    alone (churn tryout: `fpr > 0.2 over 50d` with negatives implicit after 60d read insufficient_data for ever,
    and `precision < 0.5 over 50d` read 1.000 [0.988, 1.000] with every false alarm still unlabelled; since
    readouts.matured_part such a metric reads the empty matured part: insufficient_data). The window
    it suggests holds `rule.window_s` of predictions past both the maturity and the 95th-percentile label delay."""
    from ..durations import format_duration
    wait = max(implicit_s, delay_upper_s or 0.0)
    days = math.ceil((wait + rule.window_s) / 86400.0)
    window = format_duration(rule.window_s)
    reads = ("it reads the outcomes reported explicitly alone" if canonical(rule.metric) == "label_coverage" else
             "such metrics are read over a window's matured part (predictions at least that old: the early outcomes "
             "of younger ones come without their negatives, and precision read high), empty here, so it stays "
             "insufficient_data")
    return (f"trigger {rule.name!r}: {rule.metric} over the newest {window} reads labelled negatives, but under "
            f"`labels.policy: implicit_negative_after` a prediction of model {model!r} without an outcome counts "
            f"as negative only {format_duration(implicit_s)} after it (`labels.implicit_negative_after`), so no "
            f"prediction in that window is one yet: {reads}. A window longer than the maturity (`window: {days}d`) "
            f"holds {window} of matured predictions; `driftline metrics --matured` reads a window whose labels have "
            f"arrived")
