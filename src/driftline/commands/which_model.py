"""Which model a query command reads: --model when it is stored, else the config's `model:`, else the only
stored model (not when the config names a model that has none: a typo must not show another model); otherwise
exit 2 listing the stored models, so no command answers for a model that has no data
(issue 17: never "fraud: no predictions stored yet" while another model has data)."""

from __future__ import annotations

import difflib
import os
from collections.abc import Sequence

from ..config import ConfigError
from ..context import Context
from ..core.labels import by_name
from ..core.events import iso
from ..numbers import counted
from ..storage.urls import sqlite_file
from ..terminal import quoted_name, shell_word, visible

SHOWN = 10
"""Stored models listed in the message (the rest are counted)."""


class UnknownModel(ConfigError):
    """A --model with no stored predictions, or no --model while several models are stored (exit 2)."""


class UnknownSeries(ConfigError):
    """A --variant or --model-version with no stored predictions of the model (exit 2): a typo must not read as
    an all-empty window."""


def listing(ctx: Context) -> str:
    """'churn (7,200 predictions, newest bucket 2026-10-30T23:00:00Z), fraud (…)', or 'none yet'."""
    from ..storage.summaries import model_summaries

    rows = model_summaries(ctx.store())
    if not rows:
        return "none yet"
    parts = [f"'{visible(m)}' ({counted(n, 'prediction')}, newest bucket {iso(newest)})"
             for m, n, newest in rows[:SHOWN]]
    more = f" and {len(rows) - SHOWN} more" if len(rows) > SHOWN else ""
    return ", ".join(parts) + more


def pick_model(ctx: Context, requested: str | None, also: Sequence[str] = ()) -> str:
    """The model to read: `requested` (must be stored, or in `also`: e.g. models with a reference), else the
    config's named model, else the only stored one. With nothing stored at all the config's model is used (the
    command then says nothing is stored yet)."""
    stored = sorted(set(ctx.store().models()) | set(also), key=by_name)
    if requested is not None:
        if requested in stored:
            return requested
        raise UnknownModel(f"--model: no predictions of model '{visible(requested)}' are stored "
                           f"(stored models: {listing(ctx)}{did_you_mean(requested, stored)})")
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


def reference_model(ctx: Context, file: str | None, requested: str | None) -> str:
    """The model a reference is set for, found after the options are checked. From a file the model need not be
    stored yet (a reference set before go-live), and on a SQLite file that does not exist yet nothing is stored:
    the config's model, without opening (so creating) the database before the file has given a profile (tryout: a
    failed `reference set --file` on a new --db left an empty database behind)."""
    if file is not None:
        if requested:
            return requested
        path = sqlite_file(ctx.db_url)
        if path is not None and not os.path.exists(path):
            return ctx.config.model
    return pick_model(ctx, requested)


def _names(values: Sequence[str]) -> str:
    """"'A', 'B'" (at most SHOWN, the rest counted)."""
    parts = [f"'{visible(v)}'" for v in values[:SHOWN]]
    return ", ".join(parts) + (f" and {len(values) - SHOWN} more" if len(values) > SHOWN else "")


def closest(value: str, names: Sequence[str]) -> str | None:
    """The name a mistyped one most likely meant: one differing only in case, else the closest by difflib (as
    config keys are suggested; `--variant chalenger` → 'challenger'); None when none is close."""
    same = [n for n in names if n.casefold() == value.casefold()]
    if same:
        return same[0]
    folded = {n.casefold(): n for n in names}
    close = difflib.get_close_matches(value.casefold(), list(folded), n=1, cutoff=0.6)
    return folded[close[0]] if close else None


def did_you_mean(value: str, names: Sequence[str]) -> str:
    """"; did you mean 'challenger'?" for the closest of `names`, else ''. Every name differing from it only in
    case is offered (verification tryout: `models forget Fraud` offered 'FRAUD' alone while the config's 'fraud' was
    stored too): "did you mean 'FRAUD' or 'fraud'?"."""
    best = closest(value, names)
    if best is None:
        return ""
    near = [n for n in names if n.casefold() == best.casefold()]
    quoted = [quoted_name(n) for n in near]
    return "; did you mean " + (" or ".join(quoted) if len(quoted) < 3 else
                                ", ".join(quoted[:-1]) + " or " + quoted[-1]) + "?"


def _unknown(option: str, what: str, value: str, model: str, stored: Sequence[str]) -> UnknownSeries:
    """The error for one unknown name, with the closest stored one as a hint."""
    hint = did_you_mean(value, stored)
    return UnknownSeries(f"{option}: no {what} '{visible(value)}' is stored for model '{visible(model)}' "
                         f"(stored: {_names(stored)}{hint})")


def check_series(ctx: Context, model: str, variant: str | None, model_version: str | None = None) -> None:
    """UnknownSeries unless the model has stored predictions of `variant`, of `model_version` and of the two
    together (each where given). A model with nothing stored is not checked: the command says so itself."""
    if variant is None and model_version is None:
        return
    from ..storage.summaries import model_series

    pairs = model_series(ctx.store(), model)
    if not pairs:
        return
    variants = sorted({v for v, _ in pairs})
    versions = sorted({mv for _, mv in pairs})
    if variant is not None and variant not in variants:
        raise _unknown("--variant", "variant", variant, model, variants)
    if model_version is not None and model_version not in versions:
        raise _unknown("--model-version", "model version", model_version, model, versions)
    if variant is not None and model_version is not None and (variant, model_version) not in pairs:
        of = sorted(mv for v, mv in pairs if v == variant)
        raise UnknownSeries(f"--variant/--model-version: variant '{visible(variant)}' of model '{visible(model)}' "
                            f"has no predictions of model version '{visible(model_version)}' (its versions: "
                            f"{_names(of)})")


def file_models(models: set[str]) -> str:
    """' (the file holds model 'm': pass --model m)' for a reference file without the model asked for (tryout: the
    error named only the config's model), '' when the file holds no prediction at all."""
    if not models:
        return ""
    names = sorted(models)
    first = names[0]
    return (f" (the file holds model{'s' if len(names) > 1 else ''} {_names(names)}: pass --model "
            f"{shell_word(first) if len(names) == 1 else 'NAME'})")
