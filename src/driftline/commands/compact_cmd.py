"""`driftline compact`: the scheduled compaction of `run` and `serve` (daily 03:17), on demand. A database fed
only by `replay` was never compacted (soak tryout: the CLI had no way to start it), so its hourly buckets and
feature samples past the label horizon were kept an hour at a time for good."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..context import Context
from ..core.events import iso
from .prose import say

BATCH_GROUPS = 2000
"""Day groups merged per call of the storage functions (their max_groups); the command calls again until done."""


def register(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("compact", help="merge buckets and feature samples older than the label horizon + 1 day into "
                                       "one row a day now (what run and serve do daily at 03:17)")
    c.add_argument("--json", action="store_true", help="print what was merged as JSON")
    c.set_defaults(func=cmd_compact)


def compact_all(ctx: Context) -> dict[str, Any]:
    """Compact every day group due (buckets, then feature samples), repeating the bounded calls until none is left."""
    from ..storage.compaction import compact, compaction_cutoff
    from ..storage.samples import compact_samples

    store = ctx.store()
    cutoff = compaction_cutoff(store, ctx.config.labels.horizon_s)
    groups = before = after = days = 0
    while cutoff is not None:
        done = compact(store, cutoff, max_groups=BATCH_GROUPS)
        groups, before, after = groups + done.groups, before + done.rows_before, after + done.rows_after
        if done.groups < BATCH_GROUPS:
            break
    while cutoff is not None:
        merged = compact_samples(store, cutoff, ctx.config.drift.sample_k, max_groups=BATCH_GROUPS)
        days += merged
        if merged < BATCH_GROUPS:
            break
    return {"cutoff": None if cutoff is None else iso(cutoff), "groups": groups, "rows_before": before,
            "rows_after": after, "sample_days": days}


def cmd_compact(ctx: Context, args: argparse.Namespace) -> int:
    doc = compact_all(ctx)
    if args.json:
        ctx.console.print_json(json.dumps(doc))
        return 0
    if doc["cutoff"] is None:
        say(ctx.console, "Nothing to compact: no events stored yet.")
        return 0
    say(ctx.console, f"Compacted history before {doc['cutoff']} (labels.horizon + 1 day behind the newest event): "
                     f"{doc['groups']:,} day groups, {doc['rows_before']:,} bucket rows merged into "
                     f"{doc['rows_after']:,}; feature samples of {doc['sample_days']:,} days merged.")
    return 0
