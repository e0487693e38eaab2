"""Which variants a model's whole-model ("all") numbers describe: the one rule every consumer uses.

In a split A/B each prediction goes to one arm, so every arm is real traffic and the whole model is the sum of the
arms. In shadow mode (`ab.design: shadow`) the shadow arms score the same ids again without serving them: summed in,
a shadow model doubled the counts and moved recall/FPR, the triggers and the weekly report (new-user tryout: an
inverted shadow arm paged on-call). There the whole model is the control (production) arm only; the shadow arms
stay visible per variant and can be named (`--variant`, a trigger's `variant:`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from ..config import AB
from ..core.stats import BucketStats
from ..numbers import counted

R = TypeVar("R")


def headline_variant(ab: AB, variant: str | None) -> str | None:
    """The variant a whole-model number reads: the one asked for; else, in shadow mode, the control arm; else
    None (every variant: a split's arms are all real traffic)."""
    if variant is not None:
        return variant
    return ab.control_arm if ab.design == "shadow" else None


def in_headline(ab: AB, variant: str | None, row_variant: str) -> bool:
    """Whether a row of `row_variant` counts in the whole-model numbers (asked for `variant`)."""
    keep = headline_variant(ab, variant)
    return keep is None or row_variant == keep


def headline_rows(ab: AB, rows: Sequence[R], variant: str | None = None) -> list[R]:
    """The rows (anything with a `.variant`) that the whole-model numbers sum: headline_variant's, or all."""
    return [r for r in rows if in_headline(ab, variant, getattr(r, "variant"))]


def headline_total(ab: AB, groups: Mapping[tuple[str, str], BucketStats], variant: str | None = None
                   ) -> BucketStats:
    """The whole-model statistics: the sum, in the groups' order, of the (variant, model_version) groups that
    in_headline keeps (every consumer sums in this order, so their numbers agree to the last bit)."""
    total = BucketStats()
    for (v, _), st in groups.items():
        if in_headline(ab, variant, v):
            total.add(st)
    return total


def scope_json(ab: AB, variant: str | None, seen: Iterable[str] = ()) -> dict[str, Any] | None:
    """What a whole-model document covers when the shadow rule applies (None otherwise: a variant was asked for,
    or the design is a split): the design, the production arm counted and the shadow arms left out (those in
    `ab.arms` and any other variant seen)."""
    if variant is not None or ab.design != "shadow":
        return None
    control = ab.control_arm
    shadows = sorted((set(ab.arms) | set(seen)) - {control})
    return {"design": "shadow", "control": control, "shadow_arms": shadows, "text": scope_text(control, shadows)}


def missing_control_note(scope: dict[str, Any] | None, seen: Iterable[str]) -> str | None:
    """The note for a shadow-mode window holding other variants but none of the control arm: the whole-model
    numbers are then empty (the configured `ab.control` is not what production sends, or production stopped);
    None when there is nothing to say."""
    found = set(seen)
    if scope is None or not found or scope["control"] in found:
        return None
    return (f"no predictions of the production arm {scope['control']!r} in this window, so the whole-model numbers "
            f"are empty (ab.design: shadow counts the control arm alone); variants here: "
            f"{', '.join(sorted(found))}: set `ab.control` and `ab.arms` to the variant production serves")


def scope_text(control: str, shadows: Sequence[str]) -> str:
    """The line shown above whole-model numbers in shadow mode."""
    if not shadows:
        return f"production arm {control} only (ab.design: shadow)"
    names = ", ".join(shadows)
    s, verb = ("s", "are") if len(shadows) > 1 else ("", "is")
    return (f"production arm {control} only (ab.design: shadow; shadow arm{s} {names} {verb} not summed in: "
            f"--variant {shadows[0]} reads {'one' if s else 'it'})")


def shared_id_note(ab: AB, counters: Mapping[tuple[str, str], int], model: str | None) -> str | None:
    """In a split design, the note that some ids were scored by two variants of `model` (all time, from the
    engine's SHARED_IDS counter): the whole-model numbers then count such an id once per variant, as a shadow arm
    beside a split does (churn tryout: 2,020 'positives' for 1,010 customers); None in shadow mode or without."""
    from ..core.engine import SHARED_IDS, shared_name
    if ab.design == "shadow" or model is None:
        return None
    prefix = f"{shared_name(model)}\t"  # long names are cut and hashed in the label (engine.shared_id_label)
    pairs = sorted(((label.split("\t")[1:], n) for (name, label), n in counters.items()
                    if name == SHARED_IDS and label.startswith(prefix) and label.count("\t") == 2),
                   key=lambda kv: (-kv[1], kv[0]))
    if not pairs:
        return None
    shown = "; ".join(f"'{a}' and '{b}': {n:,}" for (a, b), n in pairs[:3]) + ("; …" if len(pairs) > 3 else "")
    return (f"some prediction ids were scored by two variants of model '{model}' ({shown} ids, all time): a shadow "
            "arm? With `ab.design: split` the whole-model numbers (and triggers without `variant:`) sum every "
            "variant, so each such id counts once per variant. With one production arm set `ab.design: shadow` "
            "(production as `ab.control`); beside a split, read each arm with `--variant` and give triggers a "
            "`variant:`")


def shared_model_note(counters: Mapping[tuple[str, str], int], model: str | None = None) -> str | None:
    """The note that some prediction ids were scored by two models (all time, from the engine's SHARED_MODELS
    counter; only pairs holding `model` when given): an outcome names no model, so it labels each model's
    prediction with its id (toxicity tryout: a toxicity report counted as spam's false negative); None without."""
    from ..core.engine import SHARED_MODELS, shared_name
    mine = None if model is None else shared_name(model)
    pairs = sorted(((label.split("\t"), n) for (name, label), n in counters.items()
                    if name == SHARED_MODELS and n and label.count("\t") == 1
                    and (mine is None or mine in label.split("\t"))), key=lambda kv: (-kv[1], kv[0]))
    if not pairs:
        return None
    shown = "; ".join(f"'{a}' and '{b}': {counted(n, 'id')}" for (a, b), n in pairs[:3]) \
        + ("; …" if len(pairs) > 3 else "")
    return (f"some prediction ids were scored by two models ({shown}, all time): an outcome is joined "
            "by prediction_id alone (an outcome's `model` field is not read), so it labels every model's prediction "
            "with that id and the models share their labels; give each model ids of its own (e.g. prefixed with the "
            "model) or a database of its own")


def shared_id_models(counters: Mapping[tuple[str, str], int]) -> list[str]:
    """Models with a SHARED_IDS count in `counters` (e.g. one replay's), sorted."""
    from ..core.engine import SHARED_IDS
    return sorted({label.split("\t")[0] for (name, label), n in counters.items() if name == SHARED_IDS and n})
