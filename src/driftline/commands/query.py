"""`driftline metrics`: windowed classifier metrics with intervals, as a table or JSON."""

from __future__ import annotations

import argparse
import json

from ..context import Context, parse_at, parse_window
from .render import metrics_table


def add_window_args(p: argparse.ArgumentParser) -> None:
    """--window/--at/--model/--variant/--json, shared by the query commands."""
    p.add_argument("--window", help="window length, e.g. 7d (default: config window)")
    p.add_argument("--at", help="window end (RFC 3339); default: newest prediction stored")
    p.add_argument("--model", help="model name (default: config model)")
    p.add_argument("--json", action="store_true", help="print JSON")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("metrics", help="classifier metrics over a window, every rate with a Wilson interval")
    add_window_args(p)
    p.add_argument("--variant", help="only this variant's predictions (e.g. B of an A/B split); the table then "
                   "has no by-variant part")
    p.add_argument("--model-version", help="only predictions of this model version (the events' model_version)")
    p.set_defaults(func=cmd_metrics)


def cmd_metrics(ctx: Context, args: argparse.Namespace) -> int:
    # lazy (as in every command module): the parser imports them all, so --help and --version must stay cheap
    from ..readouts.metrics import MetricsQuery, metrics_document

    q = MetricsQuery(model=args.model or ctx.config.model, window_s=parse_window(args.window, ctx.config),
                     at=parse_at(args.at), variant=args.variant, model_version=args.model_version)
    doc = metrics_document(ctx.store(), ctx.config, q)
    if args.json:
        print(json.dumps(doc))
    else:
        metrics_table(doc, ctx.console)
    return 0
