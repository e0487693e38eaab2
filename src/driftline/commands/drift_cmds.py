"""`driftline reference set|list|show|activate`, `driftline drift`, `driftline calibration`, `driftline slices`."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.table import Table

from ..context import Context, parse_at, parse_window
from ..config import ConfigError, parse_duration
from .render import fmt_rate, shown
from .query import add_window_args
from .readout_render import render_calibration, render_slices

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
    s.add_argument("--model", help="model name (default: config model)")
    s.add_argument("--variant", help="only this variant's predictions")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_reference_set)
    ls = rs.add_parser("list", help="stored reference versions, newest first")
    ls.add_argument("--model")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=cmd_reference_list)
    sh = rs.add_parser("show", help="the active reference (or --id) with its frozen bins")
    sh.add_argument("--model")
    sh.add_argument("--id", type=int)
    sh.add_argument("--json", action="store_true")
    sh.set_defaults(func=cmd_reference_show)
    ac = rs.add_parser("activate", help="make an earlier version the active reference")
    ac.add_argument("id", type=int)
    ac.add_argument("--model")
    ac.set_defaults(func=cmd_reference_activate)

    d = sub.add_parser("drift", help="input, score and prevalence drift of a window vs the active reference")
    add_window_args(d)
    d.add_argument("--variant")
    d.set_defaults(func=cmd_drift)
    c = sub.add_parser("calibration", help="ECE (equal-width and equal-mass) with noise floor, Brier decomposition, "
                                           "temperature, base-rate effect, label-free early warning")
    add_window_args(c)
    c.add_argument("--variant")
    c.add_argument("--matured-after", help="label maturity period for the estimate-vs-realised comparison "
                                           "(default: implicit_negative_after, else p95 label delay)")
    c.set_defaults(func=cmd_calibration)
    sl = sub.add_parser("slices", help="recall, FPR, precision, alert rate per configured slice, worst first")
    add_window_args(sl)
    sl.set_defaults(func=cmd_slices)


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
                                         reference_sample_from_file)
    from ..readouts.references import (ReferenceProblem, build_reference_profile, file_stats, load_reference,
                                       save_reference, variant_labels, window_stats)

    model = args.model or ctx.config.model
    start, end = parse_at(args.start, "--from"), parse_at(args.end, "--to")
    if args.file is None and (start is None or end is None):
        raise ConfigError("reference set: give --from and --to (stored buckets) or --file PATH (events)")
    if args.file is not None and (start is None) != (end is None):
        raise ConfigError("reference set: with --file, give both --from and --to or neither")
    if args.file is not None:
        by_variant: dict[str, Any] = {}
        stats, lo, hi, dead = file_stats(args.file, ctx.config, model, start, end, args.variant, by_variant)
        source, detail = "file", args.file
    else:
        assert start is not None and end is not None
        stats, lo, hi = window_stats(ctx.store(), ctx.config, model, start, end, args.variant)
        source, detail, dead = "window", None, 0
        by_variant = variant_labels(ctx.store(), ctx.config, model, start, end, args.variant)
    if stats.predictions == 0:
        where = args.file or f"{args.start} → {args.end}"
        raise ReferenceProblem(f"no predictions of model {model!r} in {where}: nothing to build a reference from")
    profile = build_reference_profile(stats, ctx.config, by_variant)
    store = ctx.store()
    ref_id = save_reference(store, model, profile, source, lo, hi, confusion=stats, variant=args.variant,
                            detail=detail)
    if args.file is not None:
        sample = reference_sample_from_file(args.file, ctx.config, model, start, end, args.variant)
    else:
        sample = reference_sample_from_buckets(store, ctx.config, model, lo, hi, args.variant)
    freeze_reference_sample(store, ref_id, sample)
    ref = load_reference(store, model, ref_id)
    assert ref is not None
    doc = {**ref.to_json(), "dead_letters_skipped": dead}
    if args.json:
        _print_json(doc)
    else:
        ctx.console.print(f"reference [bold]{ref_id}[/bold] set for {shown(model)}: {doc['n']:,} predictions "
                          f"{doc['start']} → {doc['end']} ({source}), {len(doc['features'])} features tracked"
                          + (f", {dead} invalid lines skipped" if dead else ""))
        for item in doc["dropped"]:
            ctx.console.print(f"  [yellow]not tracked:[/yellow] {shown(item['feature'])} ({item['reason']})")
    return 0


def cmd_reference_list(ctx: Context, args: argparse.Namespace) -> int:
    from ..readouts.references import list_references

    model = args.model or ctx.config.model
    refs = list_references(ctx.store(), model)
    if args.json:
        _print_json([r.to_json() for r in refs])
        return 0
    t = Table(title=f"reference versions of {shown(model)}", title_justify="left")
    for col in ("id", "active", "source", "start", "end", "n", "created"):
        t.add_column(col)
    for r in refs:
        j = r.to_json()
        t.add_row(str(r.id), "✓" if r.active else "", shown(r.source + (f" {r.detail}" if r.detail else "")),
                  j["start"] or "—", j["end"] or "—", f"{r.n:,}", j["created_at"])
    ctx.console.print(t)
    return 0


def cmd_reference_show(ctx: Context, args: argparse.Namespace) -> int:
    from ..readouts.references import NoReference, ReferenceProblem, load_reference

    model = args.model or ctx.config.model
    ref = load_reference(ctx.store(), model, args.id)
    if ref is None:
        if args.id is None:
            raise NoReference(model)
        raise ReferenceProblem(f"no reference {args.id} for model {model!r} (see `driftline reference list`)")
    doc = ref.to_json(with_profile=True)
    if args.json:
        _print_json(doc)
        return 0
    prev = doc["prevalence"] or {}
    prev_s = "—" if prev.get("value") is None else f"{prev['value']:.4f} ({prev['k']}/{prev['n']})"
    ctx.console.print(f"reference [bold]{ref.id}[/bold]{' (active)' if ref.active else ''} · {shown(model)} · "
                      f"{doc['start']} → {doc['end']} · {ref.n:,} predictions · source {shown(ref.source)} · "
                      f"prevalence {prev_s}")
    t = Table(title="tracked features (frozen bins)", title_justify="left")
    for col in ("feature", "kind", "n", "bins"):
        t.add_column(col)
    for f in ref.profile().features:
        t.add_row(shown(f.feature), f.kind, f"{f.n:,}", shown(", ".join(f.labels)))
    ctx.console.print(t)
    for item in doc["dropped"]:
        ctx.console.print(f"  [yellow]not tracked:[/yellow] {shown(item['feature'])} ({item['reason']})")
    return 0


def cmd_reference_activate(ctx: Context, args: argparse.Namespace) -> int:
    from ..readouts.references import activate_reference

    model = args.model or ctx.config.model
    activate_reference(ctx.store(), model, args.id)
    ctx.console.print(f"reference {args.id} is now the active reference of {shown(model)}")
    return 0


# --- drift, calibration, slices ------------------------------------------------------------------------
def _window(ctx: Context, args: argparse.Namespace, model: str) -> Any:
    from ..readouts.drift import query_window

    return query_window(ctx.store(), ctx.config, model, parse_window(args.window, ctx.config), parse_at(args.at))


def cmd_drift(ctx: Context, args: argparse.Namespace) -> int:
    from ..readouts.drift import drift_document

    model = args.model or ctx.config.model
    doc = drift_document(ctx.store(), ctx.config, model, _window(ctx, args, model), args.variant)
    return _emit(ctx, args, doc, render_drift)


def _render_multivariate(mv: dict[str, Any] | None, console: Console) -> None:
    """One line: the PCA reconstruction error of the window's sample vs the reference's, p-value, verdict."""
    if mv is None:
        return
    if mv.get("drifted") is None:
        console.print(f"multivariate (PCA reconstruction error): no verdict: {shown(mv.get('note') or '')}")
        return
    n = mv["n"]
    verdict = "[bold red]drifted[/bold red]" if mv["drifted"] else "not drifted"
    console.print(f"multivariate (PCA reconstruction error, {mv['components']} of {len(mv['columns'])} components): "
                  f"window {_f(mv['error'])} vs reference {_f(mv['reference_error'])} (ratio {_f(mv['ratio'])}, "
                  f"floor ±{_f(mv['noise_floor'])}) · p {_p(mv['p_value'])} · {verdict} · "
                  f"sampled n={n['window']:,} vs {n['reference_calibration']:,}")


def cmd_calibration(ctx: Context, args: argparse.Namespace) -> int:
    from ..readouts.drift import calibration_document

    model = args.model or ctx.config.model
    matured = None
    if args.matured_after is not None:
        try:
            matured = parse_duration(args.matured_after)
        except ValueError as err:
            raise ConfigError(f"--matured-after: {err}") from None
    doc = calibration_document(ctx.store(), ctx.config, model, _window(ctx, args, model), args.variant, matured)
    return _emit(ctx, args, doc, render_calibration)


def cmd_slices(ctx: Context, args: argparse.Namespace) -> int:
    from ..readouts.drift import slices_document

    model = args.model or ctx.config.model
    doc = slices_document(ctx.store(), ctx.config, model, _window(ctx, args, model))
    return _emit(ctx, args, doc, render_slices)


# --- rendering -----------------------------------------------------------------------------------------
def _f(v: float | None, digits: int = 3) -> str:
    return "—" if v is None else f"{v:.{digits}f}"


def _p(p: float | None) -> str:
    return "—" if p is None else ("<0.0001" if p < 1e-4 else f"{p:.2g}")


_SEVERITY = {"alert": "[red]alert[/red]", "warning": "[yellow]warning[/yellow]", "none": "none"}


def _drift_row(t: Table, f: dict[str, Any]) -> None:
    test = f.get("ks") if f["kind"] == "numeric" else f.get("chi2")
    nf = f["noise_floor"]
    t.add_row(shown(f["feature"]), f["kind"], _f(f["psi"]), _f(f["js"]),
              "—" if test is None else f"{'KS' if f['kind'] == 'numeric' else 'χ²'} {_p(test['p_adjusted'])}",
              f"{_f(nf.get('psi'))} / {_f(nf.get('js'))}", _SEVERITY.get(f["severity"], f["severity"]),
              "[bold red]yes[/bold red]" if f["drifted"] else "no", f"{f['n_current']:,}")


def render_drift(doc: dict[str, Any], console: Console) -> None:
    """Ranked drift table: feature, kind, PSI, JS, adjusted p, noise floors, severity, drifted; then prevalence."""
    w, r = doc["window"], doc["reference"]
    variant = f" · variant {shown(doc['variant'])}" if doc["variant"] else ""
    console.print(f"[bold]drift[/bold] · {shown(doc['model'])}{variant} · "
                  f"window {w['start']} → {w['end']} ({w['label']}, n={w['n']:,}) vs reference {r['id']} "
                  f"({r['start']} → {r['end']}, n={r['n']:,})")
    t = Table(title_justify="left")
    for col in ("feature", "kind", "PSI", "JS", "p adj (BH)", "floor PSI / JS", "severity", "drifted", "n"):
        t.add_column(col, justify="left" if col in ("feature", "kind") else "right")
    for f in doc["features"]:
        _drift_row(t, f)
    if doc["score"] is not None:
        t.add_section()
        _drift_row(t, {**doc["score"], "feature": "(score)"})
    console.print(t)
    p = doc["prevalence"]
    cur = p["current"]
    ref_s = "—" if p["reference"] is None else f"{p['reference']:.4f}"
    console.print(f"prevalence: reference {ref_s} · current {fmt_rate(cur, 4)} · p adj {_p(p.get('p_adjusted'))} · "
                  + ("[bold red]drifted[/bold red]" if p["drifted"] else "not drifted"))
    _render_multivariate(doc.get("multivariate"), console)
    th = doc["thresholds"]
    console.print(f"[dim]drifted = (PSI ≥ {th['psi_warning']} or JS ≥ {th['js']}, each above its no-drift noise floor) "
                  f"and a KS/χ² p < {th['alpha']} after Benjamini–Hochberg; alert when PSI ≥ {th['psi_alert']}. "
                  f"PSI floors empty bins at {th['psi_eps']}.[/dim]")
    if doc["untracked"]:
        console.print(f"[dim]not in the reference (not compared): {shown(', '.join(doc['untracked']))}[/dim]")
