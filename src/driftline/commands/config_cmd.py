"""`driftline config check`: load and validate the config file as every command does (kafka.options and triggers
included) and say what it read, touching no database and no network: a check for CI or before a rollout (it was
`alerts render --out /dev/null`, the one command that needed neither)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.markup import escape

from ..config import Config
from ..context import Context
from ..metric_names import TIME_METRICS, canonical, line_text
from ..storage.urls import UnusableURL, check_url
from ..terminal import visible


def register(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("config", help="the config file (subcommand: check)")
    s = c.add_subparsers(dest="config_command", required=True, metavar="ACTION")
    k = s.add_parser("check", help="load and validate --config (every check a command does at start) and print what "
                                   "it read; no database or Kafka is contacted (exit 0 valid, 2 refused)")
    k.add_argument("--json", action="store_true", help="print {ok, config, summary} or {ok: false, error} as JSON")
    k.set_defaults(func=cmd_check, on_config_error=config_error, no_database=True)


def summary(config: Config) -> dict[str, Any]:
    """What a check reports of a valid config: the settings an on-call engineer compares with the rollout plan."""
    k = config.kafka
    return {
        "model": config.model, "threshold": config.threshold, "bucket": config.bucket, "window": config.window,
        "labels": {"policy": config.labels.policy, "horizon": config.labels.horizon,
                   "implicit_negative_after": (None if config.labels.implicit_after_s is None
                                               else config.labels._implicit_text)},  # noqa: SLF001 - 30d when unset
        "triggers": [{"name": t.name, "metric": t.metric, "op": t.op, "value": t.line, "window": t.window,
                      "severity": t.severity, "feature": t.feature, "variant": t.variant} for t in config.triggers],
        "kafka": {"bootstrap": k.bootstrap, "predictions_topic": k.predictions_topic,
                  "outcomes_topic": k.outcomes_topic, "dead_letter_topic": k.dead_letter_topic,
                  "group_id": k.group_id, "options": sorted(k.options)},
        "database": None if config.database is None else config.database.split(":", 1)[0],
        "features": len(config.features), "slices": list(config.slices),
        "notify": [name for name in ("alertmanager_url", "webhook_url") if getattr(config.notify, name)],
    }


def _line(metric: str, value: float) -> str:
    """A trigger's line as the check shows it: '0.7', a duration for a metric measured in seconds as every output
    writes it (metric_names.line_text: '30 d', not '2.592e+06'; '90061s', not a rounded '1 d')."""
    return line_text(metric, value) if canonical(metric) in TIME_METRICS else f"{value:g}"


def _lines(doc: dict[str, Any], path: str) -> list[str]:
    """The summary as the few lines the terminal shows."""
    k, labels = doc["kafka"], doc["labels"]
    policy = labels["policy"] + (f" after {labels['implicit_negative_after']}" if labels["implicit_negative_after"]
                                 else "")
    out = [f"config {path}: valid",
           f"  model {doc['model']}, threshold {doc['threshold']:g}, bucket {doc['bucket']}, window {doc['window']}",
           f"  labels: horizon {doc['labels']['horizon']}, {policy}",
           f"  triggers: {len(doc['triggers'])}"]
    for t in doc["triggers"]:
        on = "".join(f", {key} {t[key]}" for key in ("feature", "variant") if t[key] is not None)
        out.append(f"    {t['name']}: {t['metric']} {t['op']} {_line(t['metric'], t['value'])} over {t['window']} ({t['severity']}{on})")
    bootstrap = k["bootstrap"] or "not set (run takes --kafka or DRIFTLINE_KAFKA_BOOTSTRAP)"
    out.append(f"  kafka: predictions_topic {k['predictions_topic']}, outcomes_topic {k['outcomes_topic']}, "
               f"dead_letter_topic {k['dead_letter_topic'] or 'none'}; group_id {k['group_id']}; bootstrap {bootstrap}")
    if k["options"]:
        out.append(f"  kafka.options: {', '.join(k['options'])}")
    out.append(f"  database: {doc['database'] + ' URL in the config' if doc['database'] else 'not in the config '}"
               + ("" if doc["database"] else "(--db, DRIFTLINE_DB or the default sqlite:///driftline.db)"))
    return out


def cmd_check(ctx: Context, args: argparse.Namespace) -> int:
    if args.config_path is None:
        return config_error(ctx.err, ctx.console, args, "no config given: pass --config PATH (or set "
                            "DRIFTLINE_CONFIG); without one every command runs on the built-in defaults")
    if ctx.config.database is not None:  # as a command checks it at start (the folder of a SQLite file included)
        try:
            check_url(ctx.config.database)
        except UnusableURL as err:
            return config_error(ctx.err, ctx.console, args, f"config {args.config_path}: `database`: {err}")
    doc = summary(ctx.config)
    if args.json:
        ctx.console.print_json(json.dumps({"ok": True, "config": args.config_path, "summary": doc}))
        return 0
    for line in _lines(doc, args.config_path):
        ctx.console.print(escape(visible(line)), soft_wrap=True, highlight=False)
    return 0


def config_error(err: Any, console: Any, args: argparse.Namespace, message: str) -> int:
    """A refused config: `error: …` on stderr (the message names the field and its line), or with --json the
    same as {ok: false, error} on stdout, so a pipeline reads one document either way; exit 2."""
    if getattr(args, "json", False):
        console.print_json(json.dumps({"ok": False, "config": args.config_path, "error": message}))
    else:
        err.print(f"[red]error:[/red] {escape(visible(message))}", soft_wrap=True)
    return 2
