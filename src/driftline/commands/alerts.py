"""`driftline alerts`: trigger states and alert history; `alerts evaluate` (one pass), `alerts render` (rules)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rich.table import Table

from ..context import Context, parse_at
from ..triggers import history
from ..triggers.model import FIRING, Rule
from ..triggers.mixin import DEFAULT, RULE_FILES, prometheus_rule
from ..readouts.windows import iso
from .render import shown
from .which_model import pick_model

# notify, runner, drift_hook and rules (scipy) are imported inside the handlers: the parser imports every command
# module, and --help or --version must not pay for them (issue 17).

DEFAULT_JOB = DEFAULT.job
MODEL_HELP = "model whose triggers to show or evaluate (default: the config's `model:`, else the only model stored)"
_STYLE = {"ok": "green", "pending": "yellow", "firing": "bold red", "resolved": "cyan",
          "insufficient_data": "magenta"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("alerts", help="trigger states and alert history (subcommands: evaluate, validate, render)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--limit", type=int, default=50, help="history rows (newest first)")
    p.add_argument("--trigger", help="only this trigger's history")
    p.add_argument("--model", help=MODEL_HELP)
    p.set_defaults(func=cmd_show)
    s = p.add_subparsers(dest="alerts_command", metavar="SUBCOMMAND")
    e = s.add_parser("evaluate", help="evaluate every trigger once, store the result and notify")
    e.add_argument("--at", help="evaluation time (RFC 3339 or epoch seconds; default now): windows end here")
    e.add_argument("--json", action="store_true", help="print JSON")
    e.add_argument("--no-notify", action="store_true", help="store states and history but send nothing")
    e.add_argument("--dry-run", action="store_true", help="neither store nor notify")
    e.add_argument("--model", default=argparse.SUPPRESS, help=MODEL_HELP)  # SUPPRESS: keeps `alerts --model X`
    e.set_defaults(func=cmd_evaluate)
    v = s.add_parser("validate", help="check the triggers against stored data: a variant or feature never seen "
                     "would stay insufficient_data forever (exit 1 when one does)")
    v.add_argument("--model", default=argparse.SUPPRESS, help=MODEL_HELP)
    v.set_defaults(func=cmd_validate)
    r = s.add_parser("render", help="Prometheus alerting rules generated from the config's triggers")
    r.add_argument("--out", default="-", help="output file (default: stdout), e.g. alerts/triggers.rules.yml")
    r.add_argument("--check", action="store_true", help="exit 1 when --out (or --kubernetes) differs from the "
                   "rendered rules")
    r.add_argument("--kubernetes", metavar="PATH", help="also write a Prometheus Operator PrometheusRule with these "
                   "alerts and alerts/meta + recording rules, e.g. deploy/kubernetes/prometheusrule.yaml")
    r.add_argument("--rules-dir", default="alerts", help="where meta.rules.yml and recording.rules.yml are "
                   "(default: alerts)")
    r.add_argument("--job", default=DEFAULT_JOB, help="scrape job the rules select (default: %(default)s; a "
                   "ServiceMonitor's job is its Service's name)")
    r.set_defaults(func=cmd_render)


def _state_rows(ctx: Context, model: str, rules: list[Rule]) -> list[dict[str, Any]]:
    states = history.load_states(ctx.store(), model)
    out = []
    for r in rules:
        s = states.get(r.name)
        out.append({**r.to_json(), "state": None if s is None else {
            **s.to_json(), "since": iso(s.since), "updated_at": iso(s.updated_at)}})
    return out


def _line(r: Rule) -> str:
    """'psi[amount] > 0.25 · variant B': the trigger's line, its feature and variant shown escaped."""
    from ..triggers.notify import fmt_value

    feature = f"\\[{shown(r.feature)}]" if r.feature else ""  # \\[: a bracket, not rich markup
    variant = f" · variant {shown(r.variant)}" if r.variant else ""
    return f"{shown(r.metric)}{feature} {r.op} {fmt_value(r, r.value)}{variant}"


def cmd_show(ctx: Context, args: argparse.Namespace) -> int:
    from ..triggers import runner
    from ..triggers.notify import fmt_value

    model = pick_model(ctx, args.model)
    rules = runner.compile_rules(ctx.config.triggers)
    states = _state_rows(ctx, model, rules)
    rows = history.history(ctx.store(), model, args.trigger, args.limit)
    if args.json:
        print(json.dumps({"model": model, "triggers": states,
                          "history": [{**h, "at": iso(h["at"])} for h in rows]}))
        return 0
    by_name = {r.name: r for r in rules}
    t = Table(title=f"triggers of {shown(model)}", title_justify="left")
    for col in ("trigger", "severity", "line", "state", "since", "judged", "value [95 %]", "n", "window"):
        t.add_column(col, justify="right" if col in ("n",) else "left")
    for row in states:
        r = by_name[row["name"]]
        s = row["state"]
        line = _line(r) + f" ({r.mode})"
        if s is None:
            t.add_row(shown(r.name), r.severity, line, "not evaluated", "", "", "", "", r.window)
            continue
        interval = f" [{fmt_value(r, s['low'])}, {fmt_value(r, s['high'])}]" if s["low"] is not None else ""
        t.add_row(shown(r.name), r.severity, line, f"[{_STYLE.get(s['state'], '')}]{s['state']}[/]", s["since"],
                  fmt_value(r, s["judged"]), fmt_value(r, s["value"]) + interval,
                  "" if s["n"] is None else f"{s['n']:,}", s["window"])
    ctx.console.print(t)
    h = Table(title=f"alert history (newest {len(rows)})", title_justify="left")
    for col in ("when", "trigger", "transition", "value [95 %]", "n", "window", "notified"):
        h.add_column(col)
    for row in rows:
        r = by_name.get(row["trigger"])
        fmt = (lambda v: fmt_value(r, v)) if r is not None else (lambda v: "n/a" if v is None else f"{v:.4g}")
        interval = f" [{fmt(row['low'])}, {fmt(row['high'])}]" if row["low"] is not None else ""
        h.add_row(iso(row["at"]), shown(row["trigger"]), f"{row['from_state'] or '—'} → {row['to_state']}",
                  fmt(row["value"]) + interval, "" if row["n"] is None else f"{row['n']:,}", row["window"],
                  "yes" if row["notified"] else "")
    ctx.console.print(h)
    return 0


def cmd_evaluate(ctx: Context, args: argparse.Namespace) -> int:
    from ..triggers import runner
    from ..triggers.drift_hook import default_provider
    from ..triggers.notify import Notifier, fmt_value
    from ..triggers.unseen import unseen_names

    at = parse_at(args.at)
    clock_now = float(ctx.clock())
    now = clock_now if at is None else at
    ahead = at is not None and at > clock_now
    store = ctx.store()
    model = pick_model(ctx, args.model)
    # An evaluation after now is a what-if: storing its states would move the live ones into the future, where
    # every live evaluation would be refused (stored states newer than the clock) until the clock got there.
    for line in unseen_names(store, ctx.config, model, runner.compile_rules(ctx.config.triggers)):
        ctx.err.print(f"[yellow]warning:[/yellow] {shown(line)}", soft_wrap=True)
    run = runner.run(store, ctx.config, now, at=now, drift=default_provider(), persist=not (args.dry_run or ahead),
                     model=model)
    if ahead:
        ctx.err.print(f"[yellow]note:[/yellow] {iso(now)} is after now ({iso(clock_now)}): this look ahead is not "
                      "stored and notifies nobody (the live states are unchanged)")
    elif run.states_later is not None:
        ctx.err.print(f"[yellow]note:[/yellow] the stored trigger states were evaluated at {iso(run.states_later)}, "
                      f"after {iso(now)}: this look back starts from no prior state, is not stored and notifies "
                      "nobody (the live states are unchanged)")
    if not (args.dry_run or args.no_notify or ahead) and run.states_later is None:
        # One shot: no next pass refreshes the alerts, so a firing one must not expire by itself (refresh_s None),
        # and no process serves /triggers for a generatorURL (only notify.generator_url, when set).
        notifier = Notifier(ctx.config.notify, model, clock=ctx.clock, refresh_s=None)
        firing = [(r, s) for r, s in zip(run.rules, run.states) if s.state == FIRING]
        notifier.notify(run.notices, firing)
    if args.json:
        print(json.dumps(run.to_json()))
        return 0
    t = Table(title=f"triggers of {shown(run.model)} at {iso(run.at)}", title_justify="left")
    for col in ("trigger", "line", "state", "judged", "value [95 %]", "n", "change"):
        t.add_column(col)
    for r, e in zip(run.rules, run.evaluations):
        s = e.state
        interval = f" [{fmt_value(r, s.low)}, {fmt_value(r, s.high)}]" if s.low is not None else ""
        change = ""
        if e.transition is not None:
            change = f"{e.transition.from_state or '—'} → {e.transition.to_state}"
        if e.notice is not None:
            change += f" (notify: {e.notice.kind})"
        t.add_row(shown(r.name), f"{_line(r)} ({r.mode}, min n {r.min_n})",
                  f"[{_STYLE.get(s.state, '')}]{s.state}[/]", fmt_value(r, s.judged),
                  fmt_value(r, s.value) + interval, "" if s.n is None else f"{s.n:,}", change)
    ctx.console.print(t)
    return 0


def cmd_validate(ctx: Context, args: argparse.Namespace) -> int:
    from ..triggers import runner
    from ..triggers.unseen import unseen_names

    model = pick_model(ctx, args.model)
    rules = runner.compile_rules(ctx.config.triggers)
    problems = unseen_names(ctx.store(), ctx.config, model, rules)
    for line in problems:
        ctx.err.print(f"[yellow]warning:[/yellow] {shown(line)}", soft_wrap=True)
    if not problems:
        ctx.console.print(f"{len(rules)} trigger(s) of {shown(model)}: every variant and feature named is known")
    return 1 if problems else 0


def cmd_render(ctx: Context, args: argparse.Namespace) -> int:
    from ..triggers.rules import render_rules, to_yaml

    rendered = render_rules(ctx.config)
    text = to_yaml(rendered)
    for s in rendered.skipped:
        ctx.err.print(f"[yellow]skipped[/yellow] {s}")
    outputs: list[tuple[Path, str]] = []
    if args.out != "-":
        outputs.append((Path(args.out), text))
    if args.kubernetes:
        rules_dir = Path(args.rules_dir)
        texts = {"triggers.rules.yml": text}
        for name in RULE_FILES[1:]:
            path = rules_dir / name
            if not path.is_file():
                ctx.err.print(f"[red]--rules-dir: {path} not found (run from the repository root or pass "
                              f"--rules-dir)[/red]")
                return 2
            texts[name] = path.read_text()
        try:
            manifest = prometheus_rule(texts, job=args.job)
        except ValueError as err:
            ctx.err.print(f"[red]{err}[/red]")
            return 2
        outputs.append((Path(args.kubernetes), manifest))
    elif args.out == "-":
        sys.stdout.write(text)
        return 0
    if args.check:
        stale = [str(out) for out, body in outputs if (out.read_text() if out.exists() else "") != body]
        for out in stale:
            ctx.err.print(f"[red]{out} is not what `driftline alerts render` produces; re-render it[/red]")
        return 1 if stale else 0
    for out, body in outputs:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(body)
        ctx.err.print(f"wrote {len(rendered.alerts)} trigger alert rule(s) to {out}")
    return 0
