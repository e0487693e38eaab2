"""Triggers that name a feature or variant the data never had: such a trigger loads, then stays
insufficient_data forever (a typo like `variant: treatmnet`). Found at `alerts validate`, `alerts evaluate` and
service start, by comparing with the stored variants, `ab.arms`, `features:` and the active reference."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select

from ..config import Config
from ..readouts.references import load_reference
from ..storage import schema
from ..storage.store import Store
from .metrics import DRIFT, canonical
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
    stored predictions: then every name is unseen and no typo can be told)."""
    variants = stored_variants(store, model)
    if not variants:
        return []
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
    return out
