"""`driftline demo`: simulate four weeks with drift in week four, ingest on SQLite, show the numbers."""

from __future__ import annotations

import argparse
import os

from ..context import Context
from ..render import metrics_table
from ..report_metrics import MetricsQuery, metrics_document
from .ingest import run_replay
from .simulate import add_sim_args, spec_from, write_stream


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="end-to-end demo on SQLite: simulate, ingest, metrics")
    add_sim_args(p)
    p.add_argument("--workdir", default="driftline-demo", help="where the demo writes its files")
    p.set_defaults(func=cmd_demo)


def cmd_demo(ctx: Context, args: argparse.Namespace) -> int:
    os.makedirs(args.workdir, exist_ok=True)
    events = os.path.join(args.workdir, "events.jsonl")
    spec, end = spec_from(ctx, args)
    ctx.err.print(f"[bold]1/3[/bold] simulating {args.days:g} days of fraud traffic "
                  f"(drift from day {args.drift_day:g}) → {events}")
    n = write_stream(spec, end, events)
    ctx.err.print(f"      {n:,} events")
    ctx.err.print(f"[bold]2/3[/bold] ingesting into {ctx.db_url}")
    s = run_replay(ctx, events)
    ctx.err.print(f"      accepted {s['accepted']:,}, dead-lettered {s['dead_lettered']:,}, "
                  f"duplicates {s['duplicates']:,}")
    ctx.err.print("[bold]3/3[/bold] metrics for the last 7 days and for the week before")
    store = ctx.store()
    week = 7 * 86400.0
    for label, at in (("week 3 (before the drift)", end - week), ("week 4 (after the drift)", end)):
        doc = metrics_document(store, ctx.config, MetricsQuery(ctx.config.model, week, at=at))
        ctx.console.rule(label)
        metrics_table(doc, ctx.console)
    return 0


