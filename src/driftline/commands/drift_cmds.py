"""`driftline reference set|list|show|activate`, `driftline drift`, `driftline calibration`, `driftline slices`."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from ..context import Context, parse_at, parse_window, positive
from ..config import ConfigError
from ..durations import parse_duration
from ..core.events import iso
from ..numbers import MISSING, count, counted, duration, prop
from .render import mark_nothing_stored, shown
from .query import add_matured_arg, add_window_args, check_window_args, nothing_stored_for, window_end
from .which_model import check_series, file_models, pick_model, reference_model
from .prose import say
from .tables import Col, print_table
from .readout_render import SLICES_TOP, render_calibration, render_slices
from .drift_render import (DRIFT_COLS, SHOWN_NAMES, _print_dropped, _print_seasons, capped, render_drift,
                           undeclared_line)

# readouts.* (scipy) are imported inside the handlers: the parser imports every command module, and --help or
# --version must not pay for them (issue 17).


def register(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser("reference", help="reference profiles for drift: set (from stored buckets or a file), "
                                         "list, show, activate")
    rs = r.add_subparsers(dest="reference_command", required=True, metavar="ACTION")
    s = rs.add_parser("set", help="build a reference from --from/--to (stored buckets) or --file (events); "
                                  "it becomes the active version")
    s.add_argument("--from", dest="start", help="start of the reference range (RFC 3339), e.g. go-live")
    s.add_argument("--to", dest="end", help="end of the reference range (RFC 3339), e.g. go-live + 14 days")
    s.add_argument("--file", help="JSON-lines events file (run through the engine; the database's join state "
                                  "is not touched)")
    s.add_argument("--model", help="model name (default: the config's `model:`, else the only model stored)")
    s.add_argument("--variant", help="only this variant's predictions")
    s.add_argument("--seasonality", choices=("none", "hour_of_day", "day_of_week", "both"),
                   help="keep per-season slices (UTC) so a window is compared with the same hours of day / days of "
                        "week (default: drift.seasonality of the config, none); stored buckets only")
    s.add_argument("--force", action="store_true", help="store a new version even when an identical one (same "
                   "range, variant, file, seasonality, data and profile settings) exists; without it that one is "
                   "reported, made active, and nothing is added")
    s.add_argument("--json", action="store_true", help="print the new reference as JSON")
    s.set_defaults(func=cmd_reference_set)
    ls = rs.add_parser("list", help="stored reference versions, newest first")
    ls.add_argument("--model", help="model name (default: the config's `model:`, else the only model stored)")
    ls.add_argument("--json", action="store_true", help="print the versions as JSON")
    ls.set_defaults(func=cmd_reference_list)
    sh = rs.add_parser("show", help="the active reference (or --id) with its frozen bins")
    sh.add_argument("--model", help="model name (default: the config's `model:`, else the only model stored)")
    sh.add_argument("version", nargs="?", type=positive(int), metavar="N",
                    help="reference version to show, as `activate N` takes it (default: the active one)")
    sh.add_argument("--id", type=positive(int), help="reference version to show (default: the active one; ids "
                                                     "from `reference list`)")
    sh.add_argument("--json", action="store_true", help="print the reference with its profile as JSON")
    sh.set_defaults(func=cmd_reference_show)
    ac = rs.add_parser("activate", help="make an earlier version the active reference")
    ac.add_argument("id", type=positive(int), help="reference version to make active (ids from `reference list`)")
    ac.add_argument("--model", help="model name (default: the config's `model:`, else the only model stored)")
    ac.set_defaults(func=cmd_reference_activate)

    d = sub.add_parser("drift", help="input, score and prevalence drift of a window vs the active reference")
    add_window_args(d)
    d.add_argument("--variant", help="only this variant's predictions")
    d.set_defaults(func=cmd_drift)
    c = sub.add_parser("calibration", help="ECE (equal-width and equal-mass) with noise floor, Brier decomposition, "
                                           "temperature, base-rate effect, label-free early warning")
    add_window_args(c)
    c.add_argument("--variant", help="only this variant's predictions")
    c.add_argument("--matured-after", help="label maturity period for the estimate-vs-realised comparison "
                                           "(default: implicit_negative_after, else p95 label delay)")
    add_matured_arg(c)
    c.set_defaults(func=cmd_calibration)
    sl = sub.add_parser("slices", help="recall, FPR, precision, alert rate per configured slice, worst first")
    add_window_args(sl)
    add_matured_arg(sl)
    sl.add_argument("--top", type=_top, default=SLICES_TOP, metavar="N",
                    help=f"values shown per slice feature and worst slices listed, worst first (default "
                         f"{SLICES_TOP}; 0: all; --json always lists all)")
    sl.set_defaults(func=cmd_slices)


def _top(text: str) -> int:
    """`slices --top`: a whole number of values, 0 for all."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number (0 shows every value)") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"{n} is negative (0 shows every value)")
    return n


def _print_json(doc: Any) -> None:
    print(json.dumps(doc, allow_nan=False))


def _emit(ctx: Context, args: argparse.Namespace, doc: Any, render: Callable[[Any, Any], None]) -> int:
    """The document as JSON with --json, else rendered for the terminal."""
    if args.json:
        _print_json(doc)
    else:
        render(doc, ctx.console)
    return 0


# --- reference -----------------------------------------------------------------------------------------
def cmd_reference_set(ctx: Context, args: argparse.Namespace) -> int:
    from ..readouts.multivariate import (freeze_reference_sample, reference_sample_from_buckets,
                                         reference_sample_from_file, reference_sample_note)
    from ..readouts.references import (ReferenceProblem, activate_reference, active_reference_id,
                                       build_reference_profile, file_stats, load_reference, same_reference,
                                       save_reference, variant_labels, window_stats)
    from ..readouts.headline import headline_variant, scope_json
    from ..readouts.seasonal import build_seasonal, check_bucket

    start, end = parse_at(args.start, "--from"), parse_at(args.end, "--to")  # before the store is opened
    seasonality = args.seasonality or ctx.config.drift.seasonality
    check_bucket(seasonality, ctx.config.bucket_s, "--seasonality" if args.seasonality else "drift.seasonality")
    if args.file is not None and seasonality != "none":
        raise ConfigError(f"reference set: --seasonality {seasonality} needs stored buckets (--from/--to): an events "
                          "file is merged as one window (use --seasonality none)")
    if args.file is None and (start is None or end is None):
        raise ConfigError("reference set: give --from and --to (stored buckets) or --file PATH (events)")
    if args.file is not None and (start is None) != (end is None):
        raise ConfigError("reference set: with --file, give both --from and --to or neither")
    model = reference_model(ctx, args.file, args.model)
    read = headline_variant(ctx.config.ab, args.variant)  # shadow mode: the production arm's predictions
    if args.file is not None:
        by_variant: dict[str, Any] = {}
        in_file: set[str] = set()
        stats, lo, hi, dead = file_stats(args.file, ctx.config, model, start, end, read, by_variant,
                                         now=ctx.clock(), models=in_file)
        source, detail = "file", args.file
    else:
        assert start is not None and end is not None
        check_series(ctx, model, args.variant)
        stats, lo, hi = window_stats(ctx.store(), ctx.config, model, start, end, read)
        source, detail, dead = "window", None, 0
        by_variant = variant_labels(ctx.store(), ctx.config, model, start, end, args.variant)
    if stats.predictions == 0:
        where = args.file or f"{args.start} → {args.end}"
        raise ReferenceProblem(f"no predictions of model {model!r} in {where}: nothing to build a reference from"
                               + (file_models(in_file) if args.file else ""))
    profile = build_reference_profile(stats, ctx.config, by_variant)
    store = ctx.store()
    ref_id = None if args.force else same_reference(store, model, profile, source, lo, hi, confusion=stats,
                                                    variant=read, detail=detail, seasonality=seasonality)
    unchanged = ref_id is not None
    unsampled, sample_note = 0, None
    if ref_id is None:
        seasonal = None
        if seasonality != "none":
            assert lo is not None and hi is not None
            seasonal = build_seasonal(store, ctx.config, model, lo, hi, read, profile, seasonality)
        ref_id = save_reference(store, model, profile, source, lo, hi, confusion=stats, variant=read,
                                detail=detail, seasonal=seasonal)
        if args.file is not None:
            sample = reference_sample_from_file(args.file, ctx.config, model, start, end, read,
                                                now=ctx.clock())
        else:
            sample = reference_sample_from_buckets(store, ctx.config, model, lo, hi, read)
            assert lo is not None and hi is not None
            unsampled, sample_note = reference_sample_note(store, model, lo, hi, read, stats.predictions, sample)
        freeze_reference_sample(store, ref_id, sample)
    else:
        was_active = active_reference_id(store, model) == ref_id
        activate_reference(store, model, ref_id)
    ref = load_reference(store, model, ref_id)
    assert ref is not None
    doc = {**ref.to_json(), "dead_letters_skipped": dead, "unchanged": unchanged, "unsampled_predictions": unsampled}
    young = _young_reference_warning(ctx, model, lo, hi, read, doc) if source == "window" else None
    doc["warnings"] = [young] if young else []
    if young:
        say(ctx.err, young, "[yellow]warning:[/yellow] ")
    if args.json:
        _print_json(doc)
    elif unchanged:
        again = "" if was_active else " (made active again)"
        ctx.console.print(f"reference [bold]{ref_id}[/bold] of {shown(model)} unchanged{again}: the same "
                          f"{doc['n']:,} predictions {doc['start']} → {doc['end']} ({source}) with the same profile "
                          "settings are already stored (--force stores a new version anyway)")
    else:
        skipped = f", {counted(dead, 'line')} skipped (invalid, or stamped more than a day ahead)" if dead else ""
        ctx.console.print(f"reference [bold]{ref_id}[/bold] set for {shown(model)}: "
                          f"{counted(doc['n'], 'prediction')} {doc['start']} → {doc['end']} ({source}), "
                          f"{len(doc['features'])} features tracked{skipped}")
        scope = scope_json(ctx.config.ab, args.variant)
        if scope:
            ctx.console.print(f"counted: {scope['text']}")
        _print_seasons(ctx.console, doc)
        _print_dropped(ctx.console, doc["dropped"])
        if sample_note:
            ctx.console.print(f"[yellow]note:[/yellow] {sample_note}")
    return 0


def _young_reference_warning(ctx: Context, model: str, lo: float | None, hi: float | None, read: str | None,
                             doc: dict[str, Any]) -> str | None:
    """Under the implicit-negative policy, a reference reaching past the maturity boundary holds predictions whose
    early outcomes (mostly positives) have come without their negatives: its prevalence and the calibrated
    estimate's map read them (credit tryout: prevalence 0.736 for 0.06). Say so; None when wholly matured."""
    from ..readouts.matured_part import maturing
    from ..readouts.references import window_stats

    mat = maturing(ctx.store(), ctx.config)
    if mat is None or lo is None or hi is None or hi <= mat.before:
        return None
    young, _, _ = window_stats(ctx.store(), ctx.config, model, max(lo, mat.before), hi, read)
    if young.predictions == 0:
        return None
    labelled = int(young.conf[:2].sum())
    prev = (doc.get("prevalence") or {}).get("value")
    return (f"{young.predictions:,} of this reference's {doc['n']:,} predictions (those from {iso(mat.before)}) are "
            f"younger than labels.implicit_negative_after ({duration(mat.implicit_after_s)}): their {labelled:,} "
            "early outcomes count without their negatives, so the reference's prevalence "
            f"({MISSING if prev is None else prop(prev)}) and the calibrated estimate's map read them; set it with "
            "`--to` at or before "
            f"{iso(mat.before)} (`--force` to replace this one)")


def cmd_reference_list(ctx: Context, args: argparse.Namespace) -> int:
    from ..readouts.references import list_references, reference_models

    model = pick_model(ctx, args.model, reference_models(ctx.store()))
    refs = list_references(ctx.store(), model)
    if args.json:
        _print_json([r.to_json() for r in refs])
        return 0
    if not refs:
        ctx.console.print(f"no reference versions of {shown(model)} (build one with `driftline reference set`)")
        return 0
    cols = [Col("id"), Col("active", "left"), Col("source", "left", drop=3), Col("start", "left"),
            Col("end", "left"), Col("n"), Col("seasonality", "left", drop=1), Col("created", "left", drop=2)]
    rows = []
    for r in refs:
        j = r.to_json()
        rows.append([str(r.id), "✓" if r.active else "", shown(r.source + (f" {r.detail}" if r.detail else "")),
                     j["start"] or MISSING, j["end"] or MISSING, count(r.n), r.seasonality, j["created_at"]])
    print_table(ctx.console, cols, rows, title=f"reference versions of {shown(model)}")
    return 0


def cmd_reference_show(ctx: Context, args: argparse.Namespace) -> int:
    from ..readouts.references import NoReference, ReferenceProblem, load_reference, reference_models

    if args.version is not None and args.id is not None and args.version != args.id:
        raise ReferenceProblem(f"reference show: version {args.version} and --id {args.id} differ; give one")
    ref_id = args.id if args.version is None else args.version
    model = pick_model(ctx, args.model, reference_models(ctx.store()))
    ref = load_reference(ctx.store(), model, ref_id)
    if ref is None:
        if ref_id is None:
            raise NoReference(model, ctx.store().bucket_range(model))
        raise ReferenceProblem(f"no reference {ref_id} for model {model!r} (see `driftline reference list`)")
    doc = ref.to_json(with_profile=True)
    if args.json:
        _print_json(doc)
        return 0
    prev = doc["prevalence"] or {}
    prev_s = (MISSING if prev.get("value") is None
              else f"{prop(prev['value'])} ({count(prev['k'])} of {count(prev['n'])})")
    ctx.console.print(f"reference [bold]{ref.id}[/bold]{' (active)' if ref.active else ''} · {shown(model)} · "
                      f"{doc['start']} → {doc['end']} · {ref.n:,} predictions · source {shown(ref.source)} · "
                      f"prevalence {prev_s}")
    _print_seasons(ctx.console, doc)
    feats = ref.profile().features
    rows = [[shown(f.feature), f.kind, count(f.n), str(len(f.labels))] for f in feats]
    print_table(ctx.console, [Col("feature", "left"), Col("kind", "left"), Col("n"), Col("bins")], rows,
                title="tracked features (frozen bins)")
    for f in feats:  # the bins as running text: a long list wraps between labels, never inside a table cell
        say(ctx.console, shown(', '.join(f.labels)), f"  [bold]{shown(f.feature)}[/bold]: ")
        if (note := _high_cardinality_note(f)) is not None:
            say(ctx.console, note, "    [yellow]high cardinality:[/yellow] ")
    _print_dropped(ctx.console, doc["dropped"])
    return 0


def _high_cardinality_note(f: Any) -> str | None:
    """For a categorical feature with more distinct reference values than its kept categories: how many, and the
    share its (other) bin holds, so a drift readout comparing mostly `(other)` is read as such."""
    distinct = getattr(f, "distinct", None)
    if f.kind != "categorical" or not distinct or distinct <= len(f.categories) or not f.n:
        return None
    other = int(f.counts[-2]) / f.n
    kept = prop(1 - other - int(f.counts[-1]) / f.n)
    mostly = ": its drift tests mostly compare (other)" if other >= 0.5 else ""
    return (f"{count(distinct)} distinct values; the {len(f.categories)} kept (drift.top_k) hold {kept} of the "
            f"predictions and (other) {prop(other)}{mostly}")


def cmd_reference_activate(ctx: Context, args: argparse.Namespace) -> int:
    from ..readouts.references import activate_reference, reference_models

    model = pick_model(ctx, args.model, reference_models(ctx.store()))
    activate_reference(ctx.store(), model, args.id)
    ctx.console.print(f"reference {args.id} is now the active reference of {shown(model)}")
    return 0


# --- drift, calibration, slices ------------------------------------------------------------------------
def _window(ctx: Context, args: argparse.Namespace, model: str) -> Any:
    from ..readouts.drift import query_window

    return query_window(ctx.store(), ctx.config, model, parse_window(args.window, ctx.config),
                        window_end(ctx, args, model))


def cmd_drift(ctx: Context, args: argparse.Namespace) -> int:
    from ..readouts.drift import drift_document

    check_window_args(ctx, args)
    model = pick_model(ctx, args.model)
    check_series(ctx, model, args.variant)
    doc = drift_document(ctx.store(), ctx.config, model, _window(ctx, args, model), args.variant)
    return _emit(ctx, args, doc, render_drift)


def cmd_calibration(ctx: Context, args: argparse.Namespace) -> int:
    from ..readouts.drift import calibration_document

    check_window_args(ctx, args)
    model = pick_model(ctx, args.model)
    check_series(ctx, model, args.variant)
    matured = None
    if args.matured_after is not None:
        try:
            matured = parse_duration(args.matured_after)
        except ValueError as err:
            raise ConfigError(f"--matured-after: {err}") from None
    doc = calibration_document(ctx.store(), ctx.config, model, _window(ctx, args, model), args.variant, matured)
    if nothing_stored_for(ctx, args, model):
        mark_nothing_stored(doc)
    return _emit(ctx, args, doc, render_calibration)


def cmd_slices(ctx: Context, args: argparse.Namespace) -> int:
    from ..readouts.slices import slices_document

    check_window_args(ctx, args)
    model = pick_model(ctx, args.model)
    doc = slices_document(ctx.store(), ctx.config, model, _window(ctx, args, model))
    if nothing_stored_for(ctx, args, model):
        mark_nothing_stored(doc)
    return _emit(ctx, args, doc, lambda d, console: render_slices(d, console, args.top))


__all__ = ["register", "cmd_reference_set", "cmd_reference_list", "cmd_reference_show", "cmd_reference_activate",
           "cmd_drift", "cmd_calibration", "cmd_slices", "render_drift", "undeclared_line", "capped", "SHOWN_NAMES",
           "DRIFT_COLS"]
