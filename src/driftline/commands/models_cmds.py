"""`driftline models list|forget`: the stored models and their label slots (`limits.max_models`), and forgetting one
to free its slot (a junk model name from a producer bug held it for good, so a real new model was refused)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..context import Context
from ..core.events import iso
from ..core.labels import by_name
from ..numbers import MISSING, count, counted
from ..terminal import shown_as
from .prose import say
from .render import shown, shown_word
from .tables import Col, print_table
from .which_model import UnknownModel, did_you_mean

FEW = 3
"""Admitted variants or versions listed by name in the table (more are counted; --json lists all)."""
FIX_PRODUCER = ("events of a forgotten model arriving later are a new model again: admitted while a slot is free, "
                "so fix the producer that sent the name first")


def register(sub: argparse._SubParsersAction) -> None:
    m = sub.add_parser("models", help="stored models and their label slots: list, forget (frees a slot)")
    ms = m.add_subparsers(dest="models_command", required=True, metavar="ACTION")
    ls = ms.add_parser("list", help="every stored or admitted model: predictions, buckets, admitted variants and "
                                    "versions, slots used of limits.max_models, new models refused (model_limit)")
    ls.add_argument("--json", action="store_true", help="print the models as JSON")
    ls.set_defaults(func=cmd_models_list)
    f = ms.add_parser("forget", help="delete one model's stored data and free its label slot (without --yes: show "
                                     "what would be deleted and exit 1)")
    f.add_argument("name", metavar="NAME", help="the model, exactly as stored (see `driftline models list`)")
    f.add_argument("--yes", action="store_true", help="delete; without it nothing changes (exit 1)")
    f.add_argument("--force", action="store_true", help="also when NAME is the `model:` the config file names")
    f.add_argument("--json", action="store_true", help="print the rows per table as JSON")
    f.set_defaults(func=cmd_models_forget)


def _when(ts: float | None) -> str | None:
    return None if ts is None else iso(ts)


def _slots(ctx: Context, admitted: int) -> dict[str, Any]:
    lim = ctx.config.limits
    kept = ctx.config.model if ctx.model_named else None
    return {"slots_used": admitted, "max_models": lim.max_models,
            "allow_list": None if lim.models is None else sorted(lim.models), "kept_for": kept}


def list_doc(ctx: Context) -> dict[str, Any]:
    """`models list --json`: the slots, every model, and the refused new models."""
    from ..storage.inventory import inventory

    inv = inventory(ctx.store())
    doc = _slots(ctx, inv.admitted)
    if doc["kept_for"] in {m.model for m in inv.models if m.admitted}:
        doc["kept_for"] = None  # already admitted: no slot is held back for it
    held = 1 if doc["kept_for"] is not None else 0  # the config's model's slot, kept until it arrives
    doc["slots_free"] = None if doc["allow_list"] is not None else max(0, doc["max_models"] - inv.admitted - held)
    doc["models"] = [{"model": m.model, "config_model": m.model == ctx.config.model and ctx.model_named,
                      "admitted": m.admitted, "admitted_at": _when(m.admitted_at), "variants": m.variants,
                      "versions": m.versions, "predictions": m.predictions, "first_bucket": _when(m.first_bucket),
                      "last_bucket": _when(m.last_bucket)} for m in inv.models]
    doc.update(model_limit_dead_letters=inv.model_limit_dead_letters, refused_models=inv.refused,
               newest_refusal=_when(inv.newest_refusal), refused_admitted_since=_refed(ctx, inv))
    return doc


def _refed(ctx: Context, inv: Any) -> dict[str, dict[str, int]]:
    """Per model refused before and stored or admitted since, its refused events by what feeding them again would
    do (`waiting`: not stored and would be). Hostile-user tryout: `models list` kept printing "fed again: `…--raw |
    driftline replay -`" after they had been fed again, as it went by the model's name alone."""
    from ..ingest.pipeline import limits_from
    from ..storage.refeed import refeed_state

    names = {m.model for m in inv.models}
    since = [m for m in inv.refused if m in names]
    if not since:
        return {}
    state = refeed_state(ctx.store(), since, ctx.config.labels.horizon_s, limits_from(ctx.config))
    return {m: {"refused": r.refused, "stored": r.stored, "too_old": r.too_old, "unfeedable": r.unfeedable,
                "waiting": r.waiting, "unchecked": r.unchecked} for m, r in state.items()}


def _values(values: list[str]) -> str:
    if not values:
        return MISSING
    if len(values) > FEW:
        return count(len(values))
    return f"{len(values)}: " + ", ".join(shown(v) for v in values)


def _slot_line(doc: dict[str, Any]) -> str:
    if doc["allow_list"] is not None:
        return (f"{doc['slots_used']} models admitted; allow-list limits.models: "
                + ", ".join(f"'{shown(m)}'" for m in doc["allow_list"]))
    line = f"model slots: {doc['slots_used']} of {doc['max_models']} used (limits.max_models)"
    if doc["kept_for"] is not None:
        line += f"; the config's model '{shown(doc['kept_for'])}' is not admitted yet: it takes the next free slot"
    return line


def cmd_models_list(ctx: Context, args: argparse.Namespace) -> int:
    doc = list_doc(ctx)
    if args.json:
        print(json.dumps(doc, allow_nan=False))
        return 0
    say(ctx.console, _slot_line(doc))
    if doc["models"]:
        cols = [Col("model", "left"), Col("predictions"), Col("first bucket", "left", drop=2),
                Col("last bucket", "left", drop=1), Col("variants", "left", drop=3),
                Col("versions", "left", drop=3), Col("admitted", "left", drop=2)]
        rows = [[shown(m["model"]) + (" [dim](config)[/dim]" if m["config_model"] else ""), count(m["predictions"]),
                 m["first_bucket"] or MISSING, m["last_bucket"] or MISSING, _values(m["variants"]),
                 _values(m["versions"]),
                 (m["admitted_at"] or "before limits") if m["admitted"] else "no"] for m in doc["models"]]
        print_table(ctx.console, cols, rows)
    else:
        say(ctx.console, "no models stored yet")
    n = doc["model_limit_dead_letters"]
    if not n:
        say(ctx.console, "new models refused: none (no model_limit dead letters)")
        return 0
    stored = {m["model"] for m in doc["models"]}
    refused = list(doc["refused_models"].items())
    still = [(m, k) for m, k in refused if m not in stored]
    names = ", ".join(f"'{shown(m)}' ({count(k)})" for m, k in still[:10]) or "none of them now"
    say(ctx.console, f"[yellow]new models refused:[/yellow] {counted(n, 'model_limit dead letter')}, newest "
                     f"{doc['newest_refusal'] or MISSING}; among the newest, still refused: {names}. "
                     + (_admit_advice(doc) if still else ""))
    for line in _since_lines(doc["refused_admitted_since"]):
        say(ctx.console, line)
    return 0


def _since_lines(refed: dict[str, dict[str, int]]) -> list[str]:
    """The models admitted since they were refused: those with refused events still to feed again, with the command
    that does it; then those with none left (all stored since, or past what feeding again could store)."""
    waiting = [(m, r) for m, r in refed.items() if r["waiting"] or r["unchecked"]]
    done = [(m, r) for m, r in refed.items() if not (r["waiting"] or r["unchecked"])]
    out = []
    if waiting:
        out.append("admitted since they were refused: " + ", ".join(
            f"'{shown(m)}' ({_left(r)})" for m, r in waiting[:10])
            + "; the events refused before are stored only once fed again (once): `driftline dead-letters --reason "
              f"model_limit --model {shown_word(waiting[0][0])} --raw | driftline replay -`")
    if done:
        out.append("admitted since they were refused, nothing left to feed again: " + ", ".join(
            f"'{shown(m)}' ({_done(r)})" for m, r in done[:10]))
    return out


def _left(r: dict[str, int]) -> str:
    """'3 refused events not stored yet', and how many older dead letters were not read (refeed.MAX_CHECKED):
    feeding again is safe either way (what is stored already counts as a duplicate, once)."""
    from ..storage.refeed import MAX_CHECKED

    text = f"{counted(r['waiting'], 'refused event')} not stored yet"
    if r["unchecked"]:
        text += f" among the newest {count(MAX_CHECKED)} checked, {count(r['unchecked'])} older not checked"
    return text


def _done(r: dict[str, int]) -> str:
    """'2 refused events stored since, 1 older than the label horizon': why none of a model's is left to feed."""
    parts = [f"{counted(r['stored'], 'refused event')} stored since"]
    if r["too_old"]:
        parts.append(f"{count(r['too_old'])} older than the label horizon (fed again, refused past_horizon)")
    if r["unfeedable"]:
        parts.append(f"{count(r['unfeedable'])} stored cut or unreadable (`--raw` leaves them out)")
    return ", ".join(parts)


def _admit_advice(doc: dict[str, Any]) -> str:
    """How a refused model gets in: freeing a slot only when every slot is used (verification tryout: after a
    forget left 2 of 3 used, `models list` still said "Free a slot held by a junk name…"). A new model is admitted
    at its next event while a slot is free (core.labels.LabelGate.decide)."""
    if doc["allow_list"] is not None:
        return "Add a real model to limits.models to admit it."
    free = doc["slots_free"]
    if not free:
        return ("Free a slot held by a junk name with `driftline models forget NAME --yes` (fix its producer "
                "first), or raise limits.max_models.")
    return (f"{counted(free, 'slot')} {'is' if free == 1 else 'are'} free: a refused model is admitted at its next "
            "event (the first to send one takes a slot); its events refused before are stored only once fed "
            "again (see `driftline dead-letters --reason model_limit`).")


def _stored(ctx: Context) -> list[str]:
    store = ctx.store()
    return sorted({m for m, _, _ in store.admitted_labels_list()} | set(store.models()), key=by_name)


def _forget_doc(forgotten: Any, deleted: bool, ctx: Context) -> dict[str, Any]:
    from ..storage.forget import KEPT

    return {"model": forgotten.model, "deleted": deleted, "rows": forgotten.rows,
            "kept": {"outcomes": forgotten.outcomes_kept, "why": KEPT},
            "slots_used": len({m for m, _, _ in ctx.store().admitted_labels_list()}),
            "max_models": ctx.config.limits.max_models}


def _print_forget(ctx: Context, doc: dict[str, Any]) -> None:
    name = shown(doc["model"])
    title = (f"deleted the rows of model '{name}'" if doc["deleted"]
             else f"forgetting model '{name}' would delete")
    rows = [[table, count(n)] for table, n in doc["rows"].items() if n]
    print_table(ctx.console, [Col("table", "left"), Col("rows")], rows, title=title)
    why = doc["kept"]["why"]
    say(ctx.console, f"{counted(doc['kept']['outcomes'], 'outcome')} of its predictions ({why['outcomes']}); its "
                     f"alert_history ({why['alert_history']}); its dead letters ({why['dead_letters']})",
        lead="kept: ")


def _refuse_refused(ctx: Context, name: str) -> None:
    """UnknownModel saying that `name` was refused by the model limit and so holds nothing to forget: the tryout
    read "no model 'junk4' is stored … did you mean 'Junk2'?" for a name `models list` shows as refused."""
    from ..storage.inventory import inventory

    inv = inventory(ctx.store())
    n = inv.refused.get(name)
    if not n:
        return
    lim = ctx.config.limits
    by = ("not in the allow-list limits.models" if lim.models is not None
          else f"by limits.max_models ({lim.max_models}): its slots were in use")
    raise UnknownModel(f"models forget: model '{shown(name)}' was refused {by} ({count(n)} model_limit dead letters "
                       "among the newest): it was never stored, so there is nothing to forget and it holds no slot; "
                       "its events are dead letters (`driftline dead-letters --reason model_limit`): fix the "
                       "producer that sends the name")


def _as_shown(ctx: Context, typed: str) -> str:
    """The one stored model `typed` is the shown form of (`models list` shows 'evil\\x1b[31mRED' for a name holding
    an ESC; tryout: typing it back was "no such model", did you mean the same text), said on stderr; `typed` itself
    when none or several are (several: UnknownModel naming each as a shell word)."""
    matches = shown_as(typed, _stored(ctx))
    if len(matches) > 1:
        raise UnknownModel(f"models forget: no model '{shown(typed)}' is stored; {len(matches)} stored models are "
                           "shown so: " + ", ".join(shown_word(m) for m in matches) + " (give one as written here)")
    if matches:
        ctx.err.print(f"note: no model '{shown(typed)}' is stored as typed; taking it as the stored model shown so, "
                      f"{shown_word(matches[0])}", soft_wrap=True)
        return matches[0]
    return typed


def cmd_models_forget(ctx: Context, args: argparse.Namespace) -> int:
    from ..storage.forget import forget, preview

    name = args.name
    plan = preview(ctx.store(), name)
    if not plan.total:
        name = _as_shown(ctx, name)
        plan = preview(ctx.store(), name)
    if not plan.total:
        _refuse_refused(ctx, name)
        stored = _stored(ctx)
        listed = ", ".join(f"'{shown(m)}'" for m in stored) or "none"
        raise UnknownModel(f"models forget: no model '{shown(name)}' is stored (stored models: {listed}"
                           f"{did_you_mean(name, stored)})")
    config_model = ctx.model_named and name == ctx.config.model
    if not args.yes:
        doc = _forget_doc(plan, False, ctx)
        if args.json:
            print(json.dumps(doc, allow_nan=False))
            return 1
        _print_forget(ctx, doc)
        if config_model:
            say(ctx.console, f"'{shown(name)}' is the config's own model: forgetting it also needs --force",
                lead="[yellow]warning:[/yellow] ")
        say(ctx.console, f"nothing changed: run `driftline models forget {shown_word(name)} --yes` to delete; "
                         f"{FIX_PRODUCER}")
        return 1
    if config_model and not args.force:
        ctx.err.print(f"[red]error:[/red] '{shown(name)}' is the model the config names (`model:`): its slot is kept "
                      "for it anyway, so forgetting it frees none and deletes its whole history; add --force to do "
                      "so (nothing changed)", soft_wrap=True)
        return 2
    done = forget(ctx.store(), name)
    doc = _forget_doc(done, True, ctx)
    if args.json:
        print(json.dumps(doc, allow_nan=False))
        return 0
    _print_forget(ctx, doc)
    say(ctx.console, f"model slots: {doc['slots_used']} of {doc['max_models']} used; running `run`/`serve` "
                     f"processes see the freed slot at their next batch; {FIX_PRODUCER}")
    return 0
