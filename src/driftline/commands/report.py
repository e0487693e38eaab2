"""`driftline report`: the weekly drift report of one ISO week as HTML, Markdown and JSON files, also stored
in the database (one per model and week; re-running replaces it, since labels keep maturing)."""

from __future__ import annotations

import argparse
import json
import os

from ..config import ConfigError
from ..context import Context
from ..core.limits import MAX_FUTURE_S
from ..reports.weeks import default_week, parse_week, week_of
from ..terminal import visible
from .render import shown
from .which_model import pick_model


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="weekly report (HTML, Markdown, JSON) of an ISO week; stored in the database")
    p.add_argument("--week", help="ISO week, e.g. 2026-W48 (default: the last complete week before now that has "
                                  "predictions, else the last complete week before the newest prediction, else "
                                  "the newest prediction's week)")
    p.add_argument("--out", help="output directory (default: config schedule.report_dir, 'reports')")
    p.add_argument("--model", help="model name (default: the config's `model:`, else the only model stored)")
    p.add_argument("--json", action="store_true", help="print the paths and the report document as JSON")
    p.set_defaults(func=cmd_report)


def cmd_report(ctx: Context, args: argparse.Namespace) -> int:
    from ..reports.generate import generate  # lazy: matplotlib and jinja2 only for a report

    now = float(ctx.clock())
    given = parse_week(args.week) if args.week else None  # before the store: an option error is named first
    if given is not None and given.start > now + MAX_FUTURE_S:  # 9999-W52 failed on year 10000
        raise ConfigError(f"--week: {args.week} has not begun (now is {week_of(now).label}): no event of it can "
                          "be stored yet")
    out = args.out or ctx.config.schedule.report_dir
    problem = folder_problem(out)
    if problem:  # before any work: was "[Errno 17] File exists: 'x'" after the report was built
        raise ConfigError(f"{'--out' if args.out else 'config schedule.report_dir'}: {problem}")
    store = ctx.store()
    model = pick_model(ctx, args.model)
    if model not in store.models():  # a report of nothing would be written and stored
        raise ConfigError(f"report: no predictions of model {model!r} are stored yet (feed events with "
                          "`driftline replay` or `driftline run`)")
    week, reason = (given, "given") if given is not None else default_week(store, model, now, ctx.config.bucket_s)
    result = generate(store, ctx.config, model, week, now, out, replace=True, source="cli", week_reason=reason)
    if args.json:
        print(json.dumps({**result.to_json(), "report": result.doc}, allow_nan=False))
        return 0
    lm = result.doc.get("label_maturity") or {}
    note = f" (provisional: {lm.get('note') or 'labels still maturing'})" if result.provisional else ""
    empty = not sum(d.get("predictions", 0) for d in lm.get("by_day", []))
    ctx.err.print(f"report of {shown(model)} for {week.label}: {reason}{note}"
                  + ("; no predictions stored for this week" if empty else "") + "; stored in the database")
    for ext in ("html", "md", "json"):
        print(visible(result.paths[ext]))
    return 0


def folder_problem(path: str) -> str | None:
    """Why the reports cannot be written into the folder `path` (created with its parents when missing): a file
    where it or a parent should be a folder, or a parent this process may not write into; None when it can."""
    probe = os.path.abspath(path)
    while not os.path.exists(probe):
        probe = os.path.dirname(probe)
    if not os.path.isdir(probe):
        where = "" if probe == os.path.abspath(path) else f" (in {path})"
        return f"{probe} is a file, not a folder{where}; give a folder (created when missing)"
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"cannot write into {probe}: permission denied; give a folder this user may write"
    return None
