"""Which commands only read the database: they refuse a SQLite file that does not exist (exit 2, Context.store)
instead of creating an empty one, so a mistyped --db never reads as "no predictions stored yet" (user tryout)."""

from __future__ import annotations

import argparse

READERS = frozenset({"metrics", "drift", "calibration", "slices", "ab", "dead-letters", "report",
                     "alerts", "alerts validate", "alerts evaluate",
                     "reference list", "reference show", "reference activate", "reference set --from",
                     "models list", "models forget", "compact"})
"""Commands (with their action) that have nothing to do on a database that does not exist. Writers create it:
replay, run, demo, `reference set --file` (a reference before go-live) and serve (an exporter started before the
`run` or `replay` that will fill the database is a legitimate start order). `alerts evaluate` and `report` store
what they judged, but only of stored data."""


def command_name(args: argparse.Namespace) -> str:
    """'metrics', 'alerts validate', 'reference set --from' (set from stored buckets), … of the parsed command line."""
    name = args.command
    action = (getattr(args, "reference_command", None) or getattr(args, "alerts_command", None)
              or getattr(args, "models_command", None))
    if action:
        name = f"{name} {action}"
    if name == "reference set" and getattr(args, "file", None) is None:
        name += " --from"
    return name


def reads_only(args: argparse.Namespace) -> bool:
    """Whether the parsed command only reads the database (READERS)."""
    return command_name(args) in READERS
