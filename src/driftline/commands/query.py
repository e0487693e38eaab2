"""`driftline metrics`: windowed classifier metrics with intervals, as a table or JSON."""

from __future__ import annotations

import argparse
import json

from ..config import ConfigError
from ..context import Context, parse_at, parse_window
from .render import metrics_table
from .which_model import check_series, pick_model


def add_window_args(p: argparse.ArgumentParser) -> None:
    """--window/--at/--model/--variant/--json, shared by the query commands."""
    p.add_argument("--window", help="window length, e.g. 7d (default: config window)")
    p.add_argument("--at", help="window end (RFC 3339); default: newest prediction stored")
    p.add_argument("--model", help="model name (default: the config's `model:`, else the only model stored)")
    p.add_argument("--json", action="store_true", help="print JSON")


def add_matured_arg(p: argparse.ArgumentParser) -> None:
    """--matured: the newest window whose labels have arrived, instead of the newest window."""
    p.add_argument("--matured", action="store_true", help="end the window where labels have matured: the 95th "
                   "percentile label delay (stored label-delay histogram; labels.implicit_negative_after under "
                   "the implicit policy) before the newest event stored, instead of at the newest prediction")


def check_window_args(ctx: Context, args: argparse.Namespace) -> None:
    """ConfigError for a bad --window or --at, or both --at and --matured, before the database is opened: an
    option's mistake is named even when the database is missing."""
    parse_window(args.window, ctx.config)
    if parse_at(args.at) is not None and getattr(args, "matured", False):
        raise ConfigError("--matured picks the window's end itself: give --at or --matured, not both")


def nothing_stored_for(ctx: Context, args: argparse.Namespace, model: str) -> bool:
    """Whether the window would end at the model's newest prediction but none is stored (it would end 1970-01-01)."""
    return args.at is None and ctx.store().bucket_range(model) is None


def window_end(ctx: Context, args: argparse.Namespace, model: str | None) -> float | None:
    """--at, or with --matured the end of the newest window whose labels have matured (ConfigError if none)."""
    at = parse_at(args.at)
    if not getattr(args, "matured", False):
        return at
    if at is not None:
        raise ConfigError("--matured picks the window's end itself: give --at or --matured, not both")
    from ..readouts.maturity import label_maturity

    window_s = parse_window(args.window, ctx.config)
    m = label_maturity(ctx.store(), ctx.config, model, window_s)
    if m.matured_end is None:
        why = ("no labels are stored for it yet" if m.labels == 0 and m.p95_s is None else
               f"the stored history is shorter than the label delay ({m.source}) plus the window")
        raise ConfigError(f"--matured: no {args.window or ctx.config.window} window of model {model!r} has matured "
                          f"labels: {why}")
    return m.matured_end


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("metrics", help="classifier metrics over a window, every rate with a Wilson interval")
    add_window_args(p)
    p.add_argument("--variant", help="only this variant's predictions (e.g. B of an A/B split); the table then "
                   "has no by-variant part")
    p.add_argument("--model-version", help="only predictions of this model version (the events' model_version)")
    add_matured_arg(p)
    p.set_defaults(func=cmd_metrics)


def cmd_metrics(ctx: Context, args: argparse.Namespace) -> int:
    # lazy (as in every command module): the parser imports them all, so --help and --version must stay cheap
    from ..readouts.metrics import MetricsQuery, metrics_document

    check_window_args(ctx, args)
    model = pick_model(ctx, args.model)
    check_series(ctx, model, args.variant, args.model_version)
    q = MetricsQuery(model=model, window_s=parse_window(args.window, ctx.config),
                     at=window_end(ctx, args, model), variant=args.variant, model_version=args.model_version)
    doc = metrics_document(ctx.store(), ctx.config, q)
    if args.json:
        print(json.dumps(doc))
    else:
        metrics_table(doc, ctx.console)
    return 0
