"""`driftline demo`: four simulated weeks of fraud traffic end to end on SQLite, in event time.

Simulates four ISO weeks (ending at the Monday 00:00 UTC before now) with drift from day 21, ingests them in
time order while serving /metrics, evaluates the triggers once a day of event time (so the recall alert fires
in week four and is printed with its value, interval and n), sets the drift reference from weeks one and two,
and writes the week-four report. Settings the config lacks (triggers, features, slices, costs, domain words) are
driftline.example.yaml's.
"""

from __future__ import annotations

import argparse
import shlex
import time
import urllib.request
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import yaml
from rich.console import Console

from .. import numbers
from ..config import Config, ConfigError
from ..durations import MAX_WINDOW_DAYS, MAX_WINDOW_S, parse_duration
from ..context import Context, parse_at, port_number
from ..ingest.pipeline import Pipeline, RawRecord
from ..ingest.replay import source_name
from ..reports.weeks import week_of
from ..ingest.simulate import SimSpec, stream
from ..storage.store import Store
from ..storage.urls import sqlite_file
from ..triggers.model import FIRING, Rule, Transition
from ..readouts.windows import iso
from .progress import IngestProgress, Ramp
from .report import folder_problem
from .simulate import add_sim_args
from .prose import say
from .render import shown
from .demo_settings import (EXAMPLE_BASELINE, EXAMPLE_COSTS, EXAMPLE_DOMAIN, EXAMPLE_FEATURES, EXAMPLE_SLICES,
                            EXAMPLE_TRIGGERS, demo_config, demo_end)

if TYPE_CHECKING:
    from ..service.process import Service

DAY = 86400.0
BATCH = 20_000
DEMO_MARKER = "demo:end"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="end-to-end demo on SQLite: four simulated weeks, triggers, /metrics, report")
    add_sim_args(p, end_help="end of the simulated span (RFC 3339; default: the Monday 00:00 UTC before now, so the "
                             "weeks are whole ISO weeks)")
    p.add_argument("--workdir", default="driftline-demo", help="where the events file and the report go")
    p.add_argument("--port", type=port_number,
                   help="port of /metrics while the demo runs (default: config exporter.port, 9108; 0 picks a "
                        "free port)")
    p.add_argument("--evaluate-every", default="1d", type=evaluation_step,
                   help="trigger evaluation step in event time (default 1d)")
    p.add_argument("--reset", action="store_true", help="start from an empty database even if it holds data "
                                                        "not written by a previous demo (SQLite files only)")
    p.set_defaults(func=cmd_demo)


def evaluation_step(text: str) -> str:
    """argparse type of --evaluate-every: a positive duration of at most 100 years, kept as written (`0s` and
    `1e400s` ended in 'unexpected ValueError', exit 1)."""
    try:
        seconds = parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    if seconds > MAX_WINDOW_S:
        raise argparse.ArgumentTypeError(f"{text} is longer than {MAX_WINDOW_DAYS}d (100 years)")
    return text


# --- database ----------------------------------------------------------------------------------------------
def _sqlite_path(url: str) -> Path | None:
    """The SQLite file a URL names, parsed (`sqlite:///real.db?timeout=5` is real.db: sliced, it named a file that
    did not exist and the demo was mixed into real.db); None for anything else."""
    path = sqlite_file(url)
    return None if path is None else Path(path)


DEMO_SOURCE = "demo:source"
"""Meta key: the position source of the demo's own events file (anything else fed the database after the demo)."""


def prepare_database(ctx: Context, reset: bool) -> str | None:
    """Empty the demo database: a previous demo's SQLite file (or any, with --reset) is removed; a database
    holding other data is refused. Returns a note for the user, or None."""
    path = _sqlite_path(ctx.db_url)
    if path is None or not path.exists():
        if path is None:
            store = Store(ctx.db_url)
            try:
                store.migrate()
                if store.bucket_range(None) is not None:
                    raise ConfigError(f"{ctx.db_url} already holds data; the demo needs an empty database "
                                      "(e.g. --db sqlite:///demo.db)")
            finally:
                store.close()
        return None
    store = Store(ctx.db_url)
    try:
        store.migrate()
        had_data = store.bucket_range(None) is not None
        previous_demo = store.meta(DEMO_MARKER) is not None
        own = store.meta(DEMO_SOURCE)
        fed = [s for s in store.position_sources() if s != own and not (own is None and s.endswith("events.jsonl"))]
    finally:
        store.close()
    if had_data and not reset and (not previous_demo or fed):
        more = f" (also fed from {', '.join(fed[:3])}{' …' if len(fed) > 3 else ''})" if previous_demo else ""
        raise ConfigError(f"{path} holds data not written by the demo{more}; use --reset to replace it or "
                          "--db sqlite:///other.db")
    for suffix in ("", "-wal", "-shm"):
        p = Path(str(path) + suffix)
        if p.exists():
            p.unlink()
    return f"replaced {path} (previous demo run)" if had_data else None


# --- printing ----------------------------------------------------------------------------------------------
def _event(console: Console, text: str, lead: str = "", bar: IngestProgress | None = None) -> None:
    """A line of the demo's running log: while the progress bar is live on a terminal, printed through the bar's
    console so it lands above the bar (a print to stdout goes around rich's live display and over the bar),
    wrapped between words by `say`; in a file or pipe one line, for grep."""
    if bar is not None and bar.bar.console.is_terminal:
        say(bar.bar.console, text, lead)
    elif console.is_terminal:
        say(console, text, lead)
    else:
        console.print(lead + text, soft_wrap=True)


def alert_line(rule: Rule, t: Transition) -> str:
    """'recall_below_target FIRING (critical): recall 0.612 [0.571, 0.651] n=245 over 7d, line < 0.70'."""
    interval = f" {numbers.interval(t.low, t.high)}" if t.low is not None else ""
    return (f"{rule.name} {t.to_state.upper()} ({rule.severity}): {rule.metric} {numbers.prop(t.value)}{interval} "
            f"n={numbers.count(t.n or 0)} over {t.window}, line {rule.op} {numbers.line(rule.value)}")


def scrape(url: str) -> dict[str, float]:
    """driftline_* samples of one /metrics scrape (name{labels} → value)."""
    with urllib.request.urlopen(url + "/metrics", timeout=10) as resp:
        body = resp.read().decode()
    out = {}
    for line in body.splitlines():
        if line.startswith("driftline_"):
            key, _, value = line.rpartition(" ")
            try:
                out[key] = float(value)
            except ValueError:
                continue
    return out


# --- the run -----------------------------------------------------------------------------------------------
def _ts(ev: dict[str, Any]) -> float:
    return datetime.fromisoformat(ev["ts"].replace("Z", "+00:00")).timestamp()


def _start_service(cfg: Config, store: Store, ctx: Context, port: int | None) -> tuple[Service, str | None]:
    """The exporter over the demo database (event-time windows, no wall-clock evaluation); a busy default
    port falls back to a free one."""
    from ..service.process import Service  # lazy: every command module is imported to build the parser

    # the demo evaluates triggers itself, in event time; wall-clock scheduled jobs would race its ingestion
    service = Service(cfg, store, clock=ctx.clock, port=port, time_basis="event", evaluate=False, jobs=False)
    try:
        service.start()
        return service, None
    except OSError as err:
        if port is not None:
            raise ConfigError(f"--port {port}: {err.strerror}") from None
        service = Service(cfg, store, clock=ctx.clock, port=0, time_basis="event", evaluate=False, jobs=False)
        service.start()
        return service, f"port {cfg.exporter.port} is busy ({err.strerror}): using a free port"


def cmd_demo(ctx: Context, args: argparse.Namespace) -> int:
    t0 = time.monotonic()
    problem = folder_problem(args.workdir)
    if problem:  # before the database is reset: was "error: x: File exists" after it
        raise ConfigError(f"--workdir: {problem}")
    if args.port:  # before anything is reset, written or said: was found after the database and settings
        from ..exporter.bind import bind_problem

        problem = bind_problem(ctx.config.exporter.host, args.port)
        if problem:
            hint = " (another program listens there? pick another port, or --port 0 for any free one)" \
                if "in use" in problem else ""
            raise ConfigError(f"--port {args.port}: cannot serve /metrics on {ctx.config.exporter.host}:{args.port}: "
                              f"{problem}{hint}")
    from ..reports.generate import generate  # lazy: every command module is imported to build the parser
    cfg, filled = demo_config(ctx.config)
    step_s = parse_duration(args.evaluate_every)
    end = parse_at(args.end, "--end") if args.end else demo_end(float(ctx.clock()))
    start = end - args.days * DAY
    drift_day = None if args.drift_day is None or args.drift_day < 0 else args.drift_day
    spec = SimSpec(start=start, days=args.days, per_day=args.per_day, drift_day=drift_day, seed=args.seed,
                   model=cfg.model, prevalence=args.prevalence)
    note = prepare_database(ctx, args.reset)
    if note:
        ctx.err.print(f"[dim]{note}[/dim]")
    dctx = Context(config=cfg, db_url=ctx.db_url, console=ctx.console, err=ctx.err, clock=ctx.clock)
    store = dctx.store()
    store.set_meta(DEMO_MARKER, repr(end))
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    events = workdir / "events.jsonl"
    if filled:
        used = workdir / "driftline.yaml"
        used.write_text(yaml.safe_dump(msgspec.to_builtins(cfg), sort_keys=False))
        say(ctx.err, "no triggers in the config, so the demo uses driftline.example.yaml's: " + "; ".join(filled)
            + f". Written to {used}: run later commands with `driftline --config {shown(shlex.quote(str(used)))} …` to match",
            "[bold]settings:[/bold] ")
    service, port_note = _start_service(cfg, store, ctx, args.port)
    try:
        if port_note:
            ctx.err.print(f"[yellow]{port_note}[/yellow]")
        ctx.err.print(f"[bold]/metrics[/bold] served at {service.url}/metrics while the demo runs")
        drift_txt = "no drift" if drift_day is None else f"drift from day {drift_day:g}"
        ctx.err.print(f"[bold]1/3[/bold] simulating {args.days:g} days ({iso(start)} → {iso(end)}), "
                      f"{args.per_day:,} predictions a day, {drift_txt}; "
                      f"ingesting into {ctx.db_url} and evaluating triggers every {args.evaluate_every} of event time")
        if ctx.err.is_terminal and ctx.console.is_terminal:
            with IngestProgress(ctx.err, "simulate + ingest", end - start, time.monotonic) as bar:
                fired = run_timeline(dctx, cfg, store, spec, end, events, step_s, bar)
        else:
            fired = run_timeline(dctx, cfg, store, spec, end, events, step_s)
        ctx.err.print("[bold]2/3[/bold] week 3 against week 4 (7-day windows)")
        summary(dctx, cfg, store, end)
        samples = scrape(service.url)
        recall = [v for k, v in samples.items() if k.startswith("driftline_recall_ratio{")
                  and 'variant="all"' in k and 'window="7d"' in k]
        _event(ctx.console, f"{len(samples):,} driftline series"
               + (f", driftline_recall_ratio{{variant=\"all\",window=\"7d\"}} = {numbers.prop(recall[0])}"
                  if recall else ""), "/metrics scraped: ")
        week = week_of(end - 1.0)
        ctx.err.print(f"[bold]3/3[/bold] report of week 4 ({week.label})")
        out = workdir / "reports"
        res = generate(store, cfg, cfg.model, week, float(ctx.clock()), out, replace=True, source="demo",
                       week_reason="demo: week four, after the drift")
    finally:
        service.stop()
        dctx.close()
    ctx.console.print(f"report: {res.paths['html']}", soft_wrap=True)
    ctx.console.print(f"        {res.paths['md']}", soft_wrap=True)
    ctx.console.print(f"        {res.paths['json']}", soft_wrap=True)
    if not fired:
        ctx.console.print("[yellow]no trigger fired[/yellow]")
    base = next_command(ctx, workdir / "driftline.yaml" if filled else getattr(args, "config", None))
    ctx.err.print(f"done in {time.monotonic() - t0:.0f} s. Next, on the demo's database with its settings: `{base} "
                  f"metrics`, then `alerts`, `drift`, `ab`, `report --out {out}` or `serve --time event` (to keep "
                  "/metrics up) in place of `metrics`.")
    return 0


def next_command(ctx: Context, config: object) -> str:
    """`driftline` with the options that make later commands read the demo's database with its settings (tryout:
    the bare `driftline alerts` suggested said "no triggers configured", `ab` "costs not configured", and `report`
    replaced the demo's stored report with one without its costs)."""
    db = f" --db {shlex.quote(ctx.db_url)}" if ctx.db_source != "default" else ""
    return f"driftline{f' --config {shlex.quote(str(config))}' if config else ''}{db}"


def run_timeline(ctx: Context, cfg: Config, store: Store, spec: SimSpec, end: float, events: Path,
                 step_s: float, bar: IngestProgress | None = None) -> list[str]:
    """Write and ingest the simulated stream in event-time order; at every step boundary run maintenance and
    one trigger evaluation at that instant (printing transitions); set the reference after week three. `bar`:
    progress in event time, with batches paced so it moves at least every second."""
    from ..readouts.references import build_reference_profile, save_reference, variant_labels, window_stats
    from ..readouts.multivariate import freeze_reference_sample, reference_sample_from_buckets
    from ..readouts.seasonal import build_seasonal
    from ..triggers import history, runner  # lazy: every command module is imported to build the parser

    pipeline = Pipeline(cfg, store, clock=ctx.clock, keep_model=True)
    rules = runner.compile_rules(cfg.triggers)
    source = source_name(str(events))
    store.set_meta(DEMO_SOURCE, source)
    enc = msgspec.json.Encoder()
    fired: list[str] = []
    batch: list[RawRecord] = []
    ref_at = spec.start + min(21.0, spec.days) * DAY
    next_eval = spec.start + step_s
    reference_set = False
    n = 0
    ramp = Ramp(BATCH) if bar is not None else None
    limit = BATCH if ramp is None else ramp.next_size()

    def flush() -> None:
        nonlocal limit
        if batch:
            res = pipeline.process_batch(batch, tick=None if bar is None else bar.tick)
            if bar is not None and ramp is not None:
                bar.add(res)
                bar.update(min(_ts_of(batch[-1]), end) - spec.start)
                limit = ramp.next_size()
            batch.clear()

    def at_boundary(t: float) -> None:
        nonlocal reference_set
        flush()
        pipeline.maintain()
        if not reference_set and t >= ref_at:
            stats, lo, hi = window_stats(store, cfg, cfg.model, spec.start, spec.start + 14 * DAY)
            if stats.predictions:
                by_variant = variant_labels(store, cfg, cfg.model, spec.start, spec.start + 14 * DAY)
                profile = build_reference_profile(stats, cfg, by_variant)
                season = cfg.drift.seasonality
                seasonal = None if season == "none" else build_seasonal(store, cfg, cfg.model, lo, hi, None,
                                                                       profile, season)
                ref_id = save_reference(store, cfg.model, profile, "window", lo, hi, confusion=stats,
                                        detail="demo: weeks 1-2", seasonal=seasonal)
                freeze_reference_sample(store, ref_id, reference_sample_from_buckets(store, cfg, cfg.model, lo, hi))
                _event(ctx.err, f"drift reference set from weeks 1–2 ({stats.predictions:,} predictions"
                       + ("" if seasonal is None else f", seasonality {season}") + ")", f"      {iso(t)}  ", bar)
            reference_set = True
        run = runner.run(store, cfg, t, at=t, rules=rules)
        unsent = [(tr.trigger, tr.at) for tr in run.transitions if tr.notified]
        if unsent:  # the demo sends nothing (its alerts are about simulated traffic): history must not say it did
            history.mark_undelivered(store, cfg.model, unsent)
        by_name = {r.name: r for r in rules}
        for tr in run.transitions:
            if tr.to_state == FIRING or (tr.from_state == FIRING and tr.to_state != FIRING):
                line = shown(f"ALERT {alert_line(by_name[tr.trigger], tr)}")
                _event(ctx.console, f"[bold red]{line}[/bold red]" if tr.to_state == FIRING else line, f"{iso(t)}  ",
                       bar)
                if tr.to_state == FIRING:
                    fired.append(tr.trigger)

    with open(events, "wb") as fh:
        buf = bytearray()
        for ev in stream(spec, end=end):
            ts = _ts(ev)
            while ts >= next_eval and next_eval <= end:
                at_boundary(next_eval)
                next_eval += step_s
            line = enc.encode(ev)
            buf += line + b"\n"
            batch.append(RawRecord(source, 0, n, line))
            n += 1
            if len(batch) >= limit:
                flush()
            if len(buf) > 1 << 20:
                fh.write(buf)
                buf.clear()
        fh.write(buf)
    while next_eval <= end:
        at_boundary(next_eval)
        next_eval += step_s
    flush()
    ctx.err.print(f"      {n:,} events → {events}")
    return fired


def _ts_of(rec: RawRecord) -> float:
    """Event time of a simulated record (for the progress bar)."""
    return _ts(msgspec.json.decode(rec.payload))


def summary(ctx: Context, cfg: Config, store: Store, end: float) -> None:
    """Recall, FPR and precision of week 3 and week 4 side by side (as `driftline metrics --at`)."""
    from .render import fmt_rate, footnote_if
    from .tables import Col, print_table
    from ..numbers import count, indicative_used
    from ..readouts.metrics import MetricsQuery, metrics_document

    cols = [Col("7 days ending", "left"), Col("predictions", drop=2), Col("recall"), Col("FPR"),
            Col("precision", drop=1), Col("label coverage", drop=3)]
    rows, used = [], []
    for at in (end - 7 * DAY, end):
        doc = metrics_document(store, cfg, MetricsQuery(cfg.model, 7 * DAY, at=at))
        m = doc["metrics"]
        used += [m["recall"], m["fpr"], m["precision"], doc["label_coverage"]]
        stamp = iso(at)
        rows.append([stamp.removesuffix("T00:00:00Z"), count(doc["counts"]["predictions"]), fmt_rate(m["recall"]),
                     fmt_rate(m["fpr"]), fmt_rate(m["precision"]), fmt_rate(doc["label_coverage"])])
    midnight = all(iso(at).endswith("T00:00:00Z") for at in (end - 7 * DAY, end))
    # the time of day in the title, not the header: a 25-character header would not let the rates fit 80 columns
    print_table(ctx.console, cols, rows, title="7-day windows ending 00:00 UTC" if midnight else None)
    footnote_if(ctx.console, indicative_used(used))


__all__ = ["cmd_demo", "demo_config", "demo_end", "EXAMPLE_TRIGGERS", "EXAMPLE_FEATURES", "EXAMPLE_SLICES",
           "EXAMPLE_BASELINE", "EXAMPLE_COSTS", "EXAMPLE_DOMAIN"]
