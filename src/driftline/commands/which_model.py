"""Which model a query command reads: --model when it is stored, else the config's `model:`, else the only
stored model (not when the config names a model that has none: a typo must not show another model); otherwise
exit 2 listing the stored models, so no command answers for a model that has no data
(issue 17: never "fraud: no predictions stored yet" while another model has data)."""

from __future__ import annotations

from collections.abc import Sequence

from ..config import ConfigError
from ..context import Context
from ..core.events import iso
from ..terminal import visible

SHOWN = 10
"""Stored models listed in the message (the rest are counted)."""


class UnknownModel(ConfigError):
    """A --model with no stored predictions, or no --model while several models are stored (exit 2)."""


def listing(ctx: Context) -> str:
    """'churn (7,200 predictions, newest bucket 2026-10-30T23:00:00Z), fraud (…)', or 'none yet'."""
    from ..storage.summaries import model_summaries

    rows = model_summaries(ctx.store())
    if not rows:
        return "none yet"
    parts = [f"'{visible(m)}' ({n:,} predictions, newest bucket {iso(newest)})" for m, n, newest in rows[:SHOWN]]
    more = f" and {len(rows) - SHOWN} more" if len(rows) > SHOWN else ""
    return ", ".join(parts) + more


def pick_model(ctx: Context, requested: str | None, also: Sequence[str] = ()) -> str:
    """The model to read: `requested` (must be stored, or in `also`: e.g. models with a reference), else the
    config's named model, else the only stored one. With nothing stored at all the config's model is used (the
    command then says nothing is stored yet)."""
    stored = sorted(set(ctx.store().models()) | set(also))
    if requested is not None:
        if requested in stored:
            return requested
        raise UnknownModel(f"--model: no predictions of model '{visible(requested)}' are stored "
                           f"(stored models: {listing(ctx)})")
    default = ctx.config.model
    if not stored or default in stored and (ctx.model_named or len(stored) == 1):
        return default
    if ctx.model_named:  # a typo (`model: fruad`) must not show another model's numbers, even the only one's
        raise UnknownModel(f"the config's model '{visible(default)}' has no stored predictions; pass --model "
                           f"(stored models: {listing(ctx)})")
    if len(stored) == 1:
        return stored[0]
    raise UnknownModel(f"{len(stored)} models are stored: pass --model NAME, or set `model:` in the config "
                       f"(stored models: {listing(ctx)})")
