"""Bounded label values: which models, variants and model versions of events become Prometheus labels.

Pure: the caller loads the admitted set (stored, so every writer and every restart agree) and the gate decides
each prediction's labels against it and the limits, returning what it newly admitted and what it folded.
A new model beyond the limit is refused (`model_limit`), a new variant or version beyond its model's limit is
folded into OVERFLOW, and the reserved values are refused (`reserved_label`) so nothing collides with the
whole-model (`all`) or overflow series.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

AGGREGATE = "all"
"""Label value of the whole-model series (every variant and version together)."""
OVERFLOW = "__other__"
"""Variant or version that values beyond their model's limit are folded into; also the `model` label of the
overflow counter of refused models."""
RESERVED = frozenset({AGGREGATE, OVERFLOW})
MODEL, VARIANT, VERSION = "model", "variant", "model_version"
"""Kinds of admitted values (the Prometheus label each one becomes)."""


def by_name(model: str) -> tuple[str, str]:
    """Sort key of model names as a reader looks for them: case-insensitive (tryout: `models list` put `Junk2`
    before `churn`), the exact name breaking ties so the order stays fixed."""
    return model.casefold(), model


OVERFLOW_PREFIX = "label_overflow_"


def overflow_counter(kind: str) -> str:
    """Name of the stored counter of events folded into OVERFLOW, per model (its label): kind VARIANT or VERSION."""
    return f"{OVERFLOW_PREFIX}{kind}"


@dataclass(frozen=True, slots=True)
class LabelLimits:
    """Limits and optional allow-lists (an allow-list, when given, admits exactly its values)."""

    max_models: int = 10
    max_variants: int = 5
    max_versions: int = 10
    models: frozenset[str] | None = None
    variants: Mapping[str, frozenset[str]] = field(default_factory=dict)
    versions: Mapping[str, frozenset[str]] = field(default_factory=dict)
    reserved: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """model → variants a slot is kept for (the config's `ab.arms`): junk cannot take their places."""
    kept_models: frozenset[str] = frozenset()
    """Models a slot is kept for (the `model:` a config file names): junk models arriving first cannot take it."""


@dataclass(slots=True)
class Admitted:
    """The admitted values: models, and per model its variants and versions."""

    models: set[str] = field(default_factory=set)
    values: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    """(model, VARIANT | VERSION) → admitted values."""

    def add(self, model: str, kind: str, value: str) -> None:
        if kind == MODEL:
            self.models.add(model)
        else:
            self.values.setdefault((model, kind), set()).add(value)


@dataclass(frozen=True, slots=True)
class Refused:
    """A prediction whose labels cannot be admitted: a dead-letter reason and its detail."""

    reason: str
    detail: str


class LabelGate:
    """Decides the labels of a batch's predictions; one instance per batch (it updates `admitted` in place)."""

    def __init__(self, limits: LabelLimits, admitted: Admitted) -> None:
        self.limits = limits
        self.admitted = admitted
        self.new: list[tuple[str, str, str]] = []
        """(model, kind, value) admitted by this batch (a model's own row has value '')."""
        self.overflow: Counter[tuple[str, str]] = Counter()
        """(model, kind) → events folded (kind MODEL: events refused, model OVERFLOW)."""
        self.folded: Counter[str] = Counter()
        """model → events given OVERFLOW for their variant, their version or both (an event counts once here, once
        per kind in `overflow`)."""
        self.examples: dict[tuple[str, str], list[str]] = {}
        """(model, kind) → up to 3 values folded or refused by this batch, for the log line."""

    def decide(self, model: str, variant: str, version: str) -> tuple[str, str] | Refused:
        """The (variant, version) to store the prediction under, or why it is refused."""
        for kind, value in ((MODEL, model), (VARIANT, variant), (VERSION, version)):
            if value.strip().lower() in RESERVED:  # ' all', 'ALL' read as `all` on a dashboard and in `ab`
                return Refused("reserved_label", f"{kind} {value!r} is reserved or reads as reserved ('{AGGREGATE}' "
                               f"is the whole-model series, '{OVERFLOW}' the overflow of values beyond a limit)")
        if model not in self.admitted.models:
            allow = self.limits.models
            kept = self.limits.kept_models
            held = 0 if model in kept else len(kept - self.admitted.models)  # kept slots not yet taken
            if allow is not None and model not in allow or (
                    allow is None and len(self.admitted.models) + held >= self.limits.max_models):
                self._fold(OVERFLOW, MODEL, model)
                why = "not in limits.models" if allow is not None else f"limits.max_models={self.limits.max_models}"
                note = "" if allow is not None or not held else \
                    f" (a slot is kept for the config's model {sorted(kept)[0][:80]!r})"
                return Refused("model_limit", f"model {model[:80]!r} is new and {why} is reached{note}")
            self._admit(model, MODEL, "")
        kept = (self._value(model, VARIANT, variant, self.limits.variants, self.limits.max_variants),
                self._value(model, VERSION, version, self.limits.versions, self.limits.max_versions))
        if OVERFLOW in kept:
            self.folded[model] += 1
        return kept

    def _value(self, model: str, kind: str, value: str, allow: Mapping[str, frozenset[str]], limit: int) -> str:
        values = self.admitted.values.get((model, kind))
        if values is not None and value in values:
            return value
        listed = allow.get(model)
        kept = self.limits.reserved.get(model, frozenset()) if kind == VARIANT else frozenset()
        held = len(kept - values) if values is not None else len(kept)  # reserved slots not yet taken
        taken = len(values) if values is not None else 0
        if listed is not None and value not in listed or (
                listed is None and taken + (0 if value in kept else held) >= limit):
            self._fold(model, kind, value)
            return OVERFLOW
        self._admit(model, kind, value)
        return value

    def _admit(self, model: str, kind: str, value: str) -> None:
        self.admitted.add(model, kind, value)
        self.new.append((model, kind, value))

    def _fold(self, model: str, kind: str, value: str) -> None:
        self.overflow[(model, kind)] += 1
        seen = self.examples.setdefault((model, kind), [])
        if len(seen) < 3 and value not in seen:
            seen.append(value[:80])
