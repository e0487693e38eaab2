"""`driftline replay` and `driftline dead-letters`: feed files through the pipeline, inspect rejects."""

from __future__ import annotations

import argparse
import json
import os
from collections import Counter

from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn
from rich.table import Table

from ..config import ConfigError
from ..context import Context, positive
from ..core.events import ALL_REASONS
from ..ingest.pipeline import BatchResult, Pipeline
from ..ingest.replay import replay, resume_point
from .render import shown


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("replay", help="ingest JSON-lines events from a file or '-' (stdin)")
    p.add_argument("path", help="JSON-lines file, or - for stdin")
    p.add_argument("--batch-size", type=positive(int), default=20000, help="events per transaction (default 20000)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=cmd_replay)
    d = sub.add_parser("dead-letters", help="list rejected events with their reasons")
    d.add_argument("--limit", type=positive(int), default=20, help="how many of the latest to list (default 20)")
    d.add_argument("--reason", help=f"only this reason, one of: {', '.join(ALL_REASONS)} (see README, Dead letters)")
    d.add_argument("--json", action="store_true")
    d.set_defaults(func=cmd_dead_letters)


def run_replay(ctx: Context, path: str, batch_size: int = 20000, progress: bool | None = None) -> dict[str, object]:
    """Replay a file and run maintenance; returns the summary document."""
    pipeline = Pipeline(ctx.config, ctx.store(), clock=ctx.clock)
    start, why = resume_point(pipeline, path)
    if why:
        ctx.err.print(f"[yellow]note:[/yellow] {shown(why)}")
    show = ctx.err.is_terminal if progress is None else progress
    size = os.path.getsize(path) if path != "-" else None
    if show and size:
        with Progress(TextColumn("replay"), BarColumn(), TransferSpeedColumn(), TimeRemainingColumn(),
                      console=ctx.err) as bar:
            task = bar.add_task("replay", total=size)
            total = replay(pipeline, path, lambda _r, pos: bar.update(task, completed=pos), batch_size, start,
                           rewind=why is not None)
    else:
        total = replay(pipeline, path, None, batch_size, start, rewind=why is not None)
    maintenance = pipeline.maintain()
    if total.restarted:
        ctx.err.print(f"[yellow]note:[/yellow] {shown(total.restarted)}")
    if total.held_back is not None:
        ctx.err.print(f"[yellow]note:[/yellow] line {total.held_back:,} has no newline and is not valid JSON yet "
                      "(is the file still being written?): left for the next replay, not dead-lettered")
    return {**summary(total, maintenance), "held_back_line": total.held_back}


def summary(total: BatchResult, maintenance: Counter[tuple[str, str]]) -> dict[str, object]:
    c = total.counters
    return {
        "records": total.records,
        "accepted": total.accepted,
        "dead_lettered": total.dead,
        "duplicates": total.duplicates,
        "already_stored": total.already_stored,
        "predictions": c.get(("events", "prediction"), 0),
        "outcomes": c.get(("events", "outcome"), 0),
        "corrections": c.get(("corrections", ""), 0),
        "stale_outcomes": c.get(("stale_outcomes", ""), 0),
        "implicit_negatives": maintenance.get(("implicit_negatives", ""), 0),
        "expired_predictions": maintenance.get(("expired_predictions", ""), 0),
        "expired_outcomes": maintenance.get(("expired_outcomes", ""), 0),
    }


def cmd_replay(ctx: Context, args: argparse.Namespace) -> int:
    if args.path != "-":
        problem = _unreadable(args.path)
        if problem:
            ctx.err.print(f"[red]error:[/red] {shown(problem)}")
            return 2
    doc = run_replay(ctx, args.path, args.batch_size)
    if args.json:
        print(json.dumps(doc))
        return 0
    t = Table(title=f"replay {shown(args.path)}", title_justify="left", show_header=False)
    for k, v in doc.items():
        if v is not None:
            t.add_row(k.replace("_", " "), f"{v:,}")
    ctx.console.print(t)
    if doc["dead_lettered"]:
        ctx.console.print("[yellow]some events were dead-lettered: `driftline dead-letters` shows why[/yellow]")
    return 0


def _unreadable(path: str) -> str | None:
    """Why `path` cannot be replayed, or None when it is a readable file."""
    if not os.path.exists(path):
        return f"no such file: {path}"
    if not os.path.isfile(path):
        return f"not a file: {path}"
    try:
        with open(path, "rb"):
            return None
    except OSError as err:
        return f"cannot read {path}: {err.strerror}"


def cmd_dead_letters(ctx: Context, args: argparse.Namespace) -> int:
    if args.reason is not None and args.reason not in ALL_REASONS:
        raise ConfigError(f"--reason: unknown reason {args.reason!r}; one of: {', '.join(ALL_REASONS)}")
    store = ctx.store()
    rows = store.dead_letters(args.limit, args.reason)
    totals = {lbl: v for (n, lbl), v in store.counters().items() if n == "dead_letters"}
    if args.json:
        print(json.dumps({"totals": totals, "recent": [
            {k: (v.decode("utf-8", "replace") if isinstance(v, bytes) else v) for k, v in r.items()} for r in rows]}))
        return 0
    t = Table(title="dead letters by reason", title_justify="left")
    t.add_column("reason")
    t.add_column("count", justify="right")
    for reason, n in sorted(totals.items(), key=lambda kv: -kv[1]):
        t.add_row(shown(reason), f"{n:,}")
    ctx.console.print(t)
    r = Table(title=f"latest {len(rows)}", title_justify="left")
    for col in ("reason", "source", "partition", "offset", "detail", "raw"):
        r.add_column(col, overflow="fold")
    for row in rows:
        raw = row["raw"].decode("utf-8", "replace")
        r.add_row(shown(row["reason"]), shown(row["source"]), str(row["partition"]), str(row["offset"]),
                  shown(row["detail"]), shown(raw[:120]) + ("…" if len(raw) > 120 else ""))  # payloads, not markup
    ctx.console.print(r)
    return 0


