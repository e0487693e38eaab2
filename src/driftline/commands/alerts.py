"""`driftline alerts`: trigger states and alert history; `alerts evaluate` (one pass), `alerts render` (rules)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .. import numbers
from ..config import ConfigError
from ..context import Context, parse_at, positive
from ..metric_names import fmt_line
from ..triggers import history
from ..triggers.definition import CURRENT, CHANGED, note, shown_state
from ..triggers.model import Rule
from ..triggers.mixin import DEFAULT, RULE_FILES, prometheus_rule
from ..readouts.windows import iso
from ..terminal import quoted_name
from .render import shown
from .which_model import did_you_mean, pick_model
from .prose import say
from .tables import Col, print_table

# notify, runner, drift_hook and rules (scipy) are imported inside the handlers: the parser imports every command
# module, and --help or --version must not pay for them (issue 17).

DEFAULT_JOB = DEFAULT.job
MODEL_HELP = "model whose triggers to show or evaluate (default: the config's `model:`, else the only model stored)"
_STYLE = {"ok": "green", "pending": "yellow", "firing": "bold red", "resolved": "cyan",
          "insufficient_data": "magenta"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("alerts", help="trigger states and alert history (subcommands: evaluate, validate, render)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--limit", type=positive(int), default=50, help="history rows (newest first)")
    p.add_argument("--trigger", help="only this trigger's history")
    p.add_argument("--model", help=MODEL_HELP)
    p.set_defaults(func=cmd_show)
    s = p.add_subparsers(dest="alerts_command", metavar="SUBCOMMAND")
    e = s.add_parser("evaluate", help="evaluate every trigger once, store the result and notify")
    e.add_argument("--at", help="evaluation time (RFC 3339 or epoch seconds; default now): windows end here")
    e.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")  # keeps `alerts --json`
    e.add_argument("--no-notify", action="store_true", help="store states and history but send nothing")
    e.add_argument("--dry-run", action="store_true", help="neither store nor notify")
    e.add_argument("--model", default=argparse.SUPPRESS, help=MODEL_HELP)  # SUPPRESS: keeps `alerts --model X`
    e.set_defaults(func=cmd_evaluate)
    v = s.add_parser("validate", help="check the triggers against stored data: a variant or feature never seen "
                     "would stay insufficient_data forever (exit 1 when one does)")
    v.add_argument("--model", default=argparse.SUPPRESS, help=MODEL_HELP)
    v.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                   help="print {model, triggers, ok, problems} as JSON")
    v.set_defaults(func=cmd_validate)
    r = s.add_parser("render", help="Prometheus alerting rules generated from the config's triggers")
    r.add_argument("--out", default="-", help="output file (default: stdout), e.g. alerts/triggers.rules.yml")
    r.add_argument("--model", help="model the rules watch (default: the config's `model:`); no database is read")
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
    """Each rule with its stored state (triggers.definition.shown_state: no reading of another definition)."""
    states = history.load_states(ctx.store(), model)
    out = []
    for r in rules:
        s = states.get(r.name)
        out.append({**r.to_json(), "state": None if s is None else {
            **shown_state(r, s), "since": iso(s.since), "updated_at": iso(s.updated_at)}})
    return out


NO_TRIGGERS = "no triggers configured (see `triggers:`)"


def value_of(metric: str | None, v: float | None) -> str:
    """A trigger metric's value as the terminal shows numbers (triggers.metrics.shown_value, as the report)."""
    from ..triggers.metrics import shown_value

    return shown_value(metric, v)


def _with_interval(metric: str | None, v: float | None, lo: float | None, hi: float | None) -> str:
    """'0.471 [0.407, 0.536]' in the metric's unit."""
    return value_of(metric, v) + (f" [{value_of(metric, lo)}, {value_of(metric, hi)}]" if lo is not None else "")


def _line(r: Rule) -> str:
    """'psi[amount] > 0.25 · variant B': the trigger's line, its feature and variant shown escaped."""
    feature = f"\\[{shown(r.feature)}]" if r.feature else ""  # \\[: a bracket, not rich markup
    variant = f" · variant {shown(r.variant)}" if r.variant else ""
    return f"{shown(r.metric)}{feature} {r.op} {fmt_line(r)}{variant}"


def cmd_show(ctx: Context, args: argparse.Namespace) -> int:
    from ..triggers import runner

    model = pick_model(ctx, args.model)
    rules = runner.compile_rules(ctx.config.triggers)
    states = _state_rows(ctx, model, rules)
    rows = history.history(ctx.store(), model, args.trigger, args.limit)
    names = [r.name for r in rules]
    if args.trigger is not None and not rows and args.trigger not in names:  # a typo read as "no alert history"
        listed = ", ".join(quoted_name(n) for n in names) or "none"
        raise ConfigError(f"--trigger: no trigger {quoted_name(args.trigger)} in the config nor in the alert history "
                          f"of {quoted_name(model)} (config triggers: {listed}{did_you_mean(args.trigger, names)})")
    if args.json:
        print(json.dumps({"model": model, "triggers": states,
                          "history": [{**h, "at": iso(h["at"])} for h in rows]}))
        return 0
    by_name = {r.name: r for r in rules}
    cols = [Col("trigger", "left"), Col("severity", "left", drop=5), Col("line", "left", drop=3),
            Col("state", "left"), Col("since", "left", drop=2), Col("judged", drop=6), Col("value [95 %]"),
            Col("n"), Col("window", drop=4)]
    trows = []
    notes = []
    for row in states:
        r = by_name[row["name"]]
        s = row["state"]
        line = _line(r) + f" ({r.mode})"
        if s is None:
            trows.append([shown(r.name), r.severity, line, "not evaluated", "", "", "", "", r.window])
            continue
        if s["definition"] != CURRENT:  # judged under another definition: its reading is not this rule's
            word = "changed since judged" if s["definition"] == CHANGED else "definition unknown"
            trows.append([shown(r.name), r.severity, line, f"[magenta]{word}[/] (was {s['state']})", "", "", "", "",
                          r.window])
            notes.append(note(shown(r.name), s["definition"], s["updated_at"], s["state"],
                              ctx.config.schedule.evaluate_every))
            continue
        trows.append([shown(r.name), r.severity, line, f"[{_STYLE.get(s['state'], '')}]{s['state']}[/]", s["since"],
                      numbers.apart(value_of(r.metric, s["judged"]), s["judged"], r.value), _with_interval(r.metric, s["value"], s["low"], s["high"]),
                      numbers.count(s["n"]) if s["n"] is not None else "", s["window"]])
    if trows:
        print_table(ctx.console, cols, trows, title=f"triggers of {shown(model)}")
        for line in notes:
            say(ctx.console, line, "[yellow]note:[/yellow] ")
    else:
        ctx.console.print(NO_TRIGGERS)
    if not rows:
        ctx.console.print("no alert history" + (f" for trigger {shown(args.trigger)}" if args.trigger else ""))
        return 0
    hcols = [Col("when", "left"), Col("trigger", "left"), Col("transition", "left"), Col("value [95 %]", drop=1),
             Col("n", drop=2), Col("window", drop=3), Col("notified", "left", drop=4)]
    hrows = []
    for row in rows:
        hrows.append([iso(row["at"]), shown(row["trigger"]), f"{row['from_state'] or '—'} → {row['to_state']}",
                      _with_interval(row["metric"], row["value"], row["low"], row["high"]),
                      "" if row["n"] is None else numbers.count(row["n"]), row["window"],
                      "yes" if row["notified"] else ""])
    print_table(ctx.console, hcols, hrows, title=f"alert history (newest {len(rows)})")
    return 0


def cmd_evaluate(ctx: Context, args: argparse.Namespace) -> int:
    from ..readouts.maturity import backtest_late_labels
    from ..triggers import runner
    from ..triggers.drift_hook import default_provider
    from ..triggers.notify import Notifier, deliver
    from ..triggers.unseen import unseen_names

    at = parse_at(args.at)
    clock_now = float(int(ctx.clock()))  # whole seconds: the time is stored in the history and shown
    now = clock_now if at is None else at
    ahead = at is not None and at > clock_now
    store = ctx.store()
    model = pick_model(ctx, args.model)
    # An evaluation after now is a what-if: storing its states would move the live ones into the future, where
    # every live evaluation would be refused (stored states newer than the clock) until the clock got there.
    for line in unseen_names(store, ctx.config, model, runner.compile_rules(ctx.config.triggers)):
        say(ctx.err, shown(line), "[yellow]warning:[/yellow] ")
    run = runner.run(store, ctx.config, now, at=now, drift=default_provider(), persist=not (args.dry_run or ahead),
                     model=model)
    span = store.bucket_range(model) if at is None else None
    if span is not None and now - span[1] > 2 * ctx.config.window_s:
        newest = span[1] + ctx.config.bucket_s
        ctx.err.print(f"[yellow]note:[/yellow] judged now ({iso(now)}); the newest stored predictions of {model!r} "
                      f"end at {iso(newest)}: on a replayed history give --at (e.g. --at {iso(newest)})")
    if ahead:
        say(ctx.err, f"{iso(now)} is after now ({iso(clock_now)}): this look ahead is not "
                     "stored and notifies nobody (the live states are unchanged)", "[yellow]note:[/yellow] ")
    elif run.states_later is not None:
        say(ctx.err, f"the stored trigger states were evaluated at {iso(run.states_later)}, "
                     f"after {iso(now)}: this look back starts from no prior state, is not stored and notifies "
                     "nobody (the live states are unchanged)", "[yellow]note:[/yellow] ")
    notifying = not (args.dry_run or args.no_notify or ahead) and run.states_later is None
    if notifying:
        # One shot: no next pass refreshes the alerts, so a firing one must not expire by itself (refresh_s None),
        # and no process serves /triggers for a generatorURL (only notify.generator_url, when set).
        deliver(Notifier(ctx.config.notify, model, clock=ctx.clock, refresh_s=None), store, run)
    late = [] if at is None or ahead else backtest_late_labels(store, ctx.config, model, run.rules, now)
    if args.json:
        print(json.dumps({**run.to_json(), "late_labels": late}))
        return 0
    cols = [Col("trigger", "left"), Col("line", "left", drop=2), Col("state", "left"), Col("judged", drop=3),
            Col("value [95 %]"), Col("n"), Col("change", "left", drop=1)]
    rows = []
    for r, e in zip(run.rules, run.evaluations):
        s = e.state
        change = ""
        if e.transition is not None:
            change = f"{e.transition.from_state or '—'} → {e.transition.to_state}"
        if e.notice is not None:
            change += f" (notify: {e.notice.kind})" if notifying else f" (would notify: {e.notice.kind}; not sent)"
        rows.append([shown(r.name), f"{_line(r)} ({r.mode}, min n {r.min_n})",
                     f"[{_STYLE.get(s.state, '')}]{s.state}[/]", value_of(r.metric, s.judged),
                     _with_interval(r.metric, s.value, s.low, s.high), "" if s.n is None else numbers.count(s.n),
                     change])
    if not rows:
        ctx.console.print(NO_TRIGGERS)
        return 0
    print_table(ctx.console, cols, rows, title=f"triggers of {shown(run.model)} at {iso(run.at)}")
    for hint in late:
        say(ctx.console, shown(f"{', '.join(hint['triggers'])} ({hint['window']['label']} window): {hint['note']}"),
            "[yellow]note:[/yellow] ")
    return 0


def cmd_validate(ctx: Context, args: argparse.Namespace) -> int:
    from ..triggers import runner
    from ..triggers.unseen import unseen_names

    model = pick_model(ctx, args.model)
    rules = runner.compile_rules(ctx.config.triggers)
    problems = unseen_names(ctx.store(), ctx.config, model, rules)
    if args.json:  # verify tryout: `alerts --json validate` printed the text, `validate --json` was refused
        print(json.dumps({"model": model, "triggers": len(rules), "ok": not problems, "problems": problems}))
        return 1 if problems else 0
    for line in problems:
        say(ctx.err, shown(line), "[yellow]warning:[/yellow] ")
    if not problems:
        ctx.console.print(f"{len(rules)} trigger(s) of {shown(model)}: every variant and feature named is known")
    return 1 if problems else 0


def cmd_render(ctx: Context, args: argparse.Namespace) -> int:
    import msgspec

    from ..triggers.rules import render_rules, to_yaml

    config = ctx.config if args.model is None else msgspec.structs.replace(ctx.config, model=args.model)
    if args.model is None and not ctx.model_named:
        say(ctx.err, f"the config sets no `model:`: the rules watch the default model '{shown(config.model)}'; pass "
                     "--model NAME (or set `model:`) for another model", "[yellow]note:[/yellow] ")
    rendered = render_rules(config)
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
