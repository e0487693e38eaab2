"""`driftline ab`: the A/B readout of model variants (split or shadow) as tables and a verdict, or JSON."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.console import Console
from rich.table import Table

from ..context import Context, parse_at, parse_window
from .render import fmt_rate, shown
from .query import add_window_args

METRICS = (("recall", "recall"), ("fpr", "FPR"), ("precision", "precision"), ("alert_rate", "alert rate"))


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ab", help="A/B readout: arms, differences with intervals, SRM, label balance, power")
    add_window_args(p)
    p.add_argument("--seed", type=int, default=0, help="seed of the paired bootstrap (shadow mode)")
    p.set_defaults(func=cmd_ab)


def cmd_ab(ctx: Context, args: argparse.Namespace) -> int:
    from ..readouts.ab import ABQuery, ab_document  # lazy: the parser imports every command module

    q = ABQuery(model=args.model or ctx.config.model, window_s=parse_window(args.window, ctx.config),
                at=parse_at(args.at), seed=args.seed)
    doc = ab_document(ctx.store(), ctx.config, q)
    if args.json:
        print(json.dumps(doc, allow_nan=False))
    else:
        render_ab(doc, ctx.console)
    return 0


def _num(v: float | None, digits: int = 3) -> str:
    return "—" if v is None else f"{v:.{digits}f}"


def _iv(lo: float | None, hi: float | None, digits: int = 3) -> str:
    return "—" if lo is None or hi is None else f"[{lo:.{digits}f}, {hi:.{digits}f}]"


def _diff(d: float | None, lo: float | None, hi: float | None, digits: int = 3) -> str:
    """'+0.056 [-0.018, 0.130]', or '—' when the difference is undefined."""
    return "—" if d is None else f"{d:+.{digits}f} {_iv(lo, hi, digits)}"


def _p(p: float | None) -> str:
    return "—" if p is None else ("<0.0001" if p < 1e-4 else f"{p:.2g}")


def _dur(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    return f"{seconds / 86400:.1f} d" if seconds >= 86400 else f"{seconds / 3600:.1f} h"


def render_ab(doc: dict[str, Any], console: Console) -> None:
    """Print the readout: arms, comparisons (and paired tests), health checks, power, verdict."""
    w = doc["window"]
    span = "nothing stored" if w["start"] is None else f"{w['start']} → {w['end']}"
    console.print(f"[bold]A/B readout[/bold] · {shown(doc.get('model') or 'all models')} · {span} "
                  f"({w['label']}) · design [bold]{doc['design']}[/bold], control [bold]{shown(doc['control'])}[/bold]")
    for note in doc.get("notes", []):
        console.print(f"[yellow]note:[/yellow] {shown(note)}")
    if doc["arms"]:
        _arms_table(doc, console)
    for comp in doc["comparisons"]:
        _comparison_table(doc, comp, console)
        if comp.get("paired") is not None:
            _paired_table(comp, console)
    if doc["comparisons"]:
        _health(doc, console)
        _power(doc, console)
    console.print(f"\n[bold]Verdict:[/bold] {shown(doc['verdict'])}")
    console.print("[dim]* indicative: fewer than 30 cases behind the rate. Intervals 95 %: Wilson per arm, Newcombe "
                  "for differences; anytime = always-valid asymptotic confidence sequence, safe under repeated looks when the "
                  "window covers the experiment from its start.[/dim]")


def _arms_table(doc: dict[str, Any], console: Console) -> None:
    arms = doc["arms"]
    cur = doc.get("currency", "")
    t = Table(title="arms", title_justify="left")
    t.add_column("")
    for a in arms:
        versions = ",".join(arms[a].get("model_versions", [])) or "—"
        t.add_column(shown(f"{a}{' (control)' if a == doc['control'] else ''} · {versions}"), justify="right")
    col = list(arms.values())
    t.add_row("predictions (expected share)",
              *[f"{x['predictions']:,} ({100 * x['expected_share']:.0f} %)" for x in col])
    t.add_row("labelled / positives", *[f"{x['labelled']:,} / {x['positives']:,}" for x in col])
    for key, name in METRICS:
        t.add_row(name, *[fmt_rate(x[key]) for x in col])
    t.add_row("label coverage", *[fmt_rate(x["label_coverage"]) for x in col])
    t.add_row("label delay p50 / p95", *[f"{_dur(x['label_delay_seconds'].get('p50'))} / "
                                         f"{_dur(x['label_delay_seconds'].get('p95'))}" for x in col])
    if doc.get("costs_configured", True):
        t.add_row(f"cost per 1,000 ({cur})", *[f"{_num(x['cost_per_1000']['value'], 1)} "
                                              f"{_iv(x['cost_per_1000']['low'], x['cost_per_1000']['high'], 1)}"
                                              for x in col])
        t.add_row(f"cost per month ({cur})", *[f"{_num(x['monthly']['cost']['value'], 0)}" for x in col])
    else:
        t.add_row("cost", *["costs not configured" for _ in col])
    console.print(t)


def _comparison_table(doc: dict[str, Any], comp: dict[str, Any], console: Console) -> None:
    tr, ct = shown(comp["treatment"]), shown(comp["control"])
    t = Table(title=f"{tr} − {ct}", title_justify="left")
    for c in ("metric", "diff [95 % Newcombe]", "p", "p Holm", "relative lift", "anytime [95 %]", f"counts {tr} vs {ct}"):
        t.add_column(c, justify="right")
    for key, name in METRICS:
        m = comp["metrics"][key]
        lift = m["rel_lift"]
        lift_s = "—" if lift["value"] is None else (f"{100 * lift['value']:+.1f} % "
                                                    f"[{100 * lift['low']:+.1f}, {100 * lift['high']:+.1f}]")
        c = m["counts"]
        seq = _iv(m["seq_low"], m["seq_high"])
        mark = " ✓" if m["seq_excludes_zero"] else ""
        t.add_row(name, _diff(m["diff"], m["low"], m["high"]), _p(m["p_value"]),
                  _p(m["p_holm"]), lift_s, seq + mark,
                  f"{c['treatment']['k']}/{c['treatment']['n']} vs {c['control']['k']}/{c['control']['n']}")
    cd = comp["cost_per_1000"]
    if cd is None:
        t.add_row("cost", "costs not configured", "", "", "", "", "")
    else:
        t.add_row(f"cost / 1,000 ({cd.get('method')})", _diff(cd["diff"], cd["low"], cd["high"], 1),
                  "", "", "", "", "")
    console.print(t)


def _paired_table(comp: dict[str, Any], console: Console) -> None:
    pr = comp["paired"]
    tr, ct = shown(comp["treatment"]), shown(comp["control"])
    t = Table(title=f"shadow pairs: {pr['pairs']:,} ids scored by both (unpaired: {ct} "
                    f"{pr['unpaired']['control']:,}, {tr} {pr['unpaired']['treatment']:,})", title_justify="left")
    for c in ("", f"{tr} only", f"{ct} only", "exact McNemar p", "p Holm", "paired bootstrap diff [95 %]"):
        t.add_column(c, justify="right")
    b = pr["bootstrap"]
    for key, name in (("recall", "caught positives"), ("fpr", "flagged negatives")):
        s = pr[key]
        boot = b.get(key)
        bs = "—" if boot is None else _diff(boot["diff"], boot["low"], boot["high"])
        t.add_row(name, str(s["treatment_only"]), str(s["control_only"]), _p(s["p_value"]), _p(s["p_holm"]), bs)
    bp = b["precision"]
    t.add_row("precision", "", "", "", "", _diff(bp["diff"], bp["low"], bp["high"]))
    bc = b.get("cost_per_1000")
    if bc is not None:
        t.add_row("cost / 1,000", "", "", "", "", _diff(bc["diff"], bc["low"], bc["high"], 1))
    console.print(t)


def _health(doc: dict[str, Any], console: Console) -> None:
    srm = doc["srm"]
    obs, exp = srm.get("observed_share") or {}, srm.get("expected_share") or {}
    shares = ", ".join(f"{shown(a)} {100 * (obs.get(a) or 0):.2f} % (expected {100 * exp[a]:.1f} %)" for a in exp)
    status = "[red]MISMATCH[/red]" if srm["mismatch"] else "[green]ok[/green]"
    chi2 = "—" if srm.get("chi2") is None else f"{srm['chi2']:.2f}"
    console.print(f"\n[bold]health checks[/bold]\n  sample ratio: {status} · χ² = {chi2}, p = {_p(srm.get('p_value'))}"
                  f" · {shares}")
    for comp in doc["comparisons"]:
        lb = comp["label_balance"]
        cov = ", ".join(f"{shown(a)} {fmt_rate(r)}" for a, r in lb["coverage"].items())
        delay = ", ".join(f"{shown(a)} {_dur(v)}" for a, v in lb["median_delay_s"].items())
        ok = "[green]ok[/green]" if not lb["warnings"] else "[yellow]WARNING[/yellow]"
        tr, ct = shown(comp["treatment"]), shown(comp["control"])
        console.print(f"  label balance {tr} vs {ct}: {ok} · coverage {cov} · "
                      f"median delay {delay} (p = {_p(lb.get('delay_p_value'))})")
        for wtext in lb["warnings"]:
            console.print(f"    [yellow]![/yellow] {shown(wtext)}")
        pr = comp.get("paired")
        if pr is not None and pr["labels_follow_control"]["warning"]:
            console.print(f"    [yellow]![/yellow] labels follow {ct}'s flags (see verdict)")


def _power(doc: dict[str, Any], console: Console) -> None:
    console.print("\n[bold]power (recall, 80 %, two-sided α = 0.05)[/bold]")
    for comp in doc["comparisons"]:
        pw = comp["power"]
        per_day = pw.get("positives_per_arm_per_day")
        rate_s = "—" if per_day is None else f"{per_day:.1f}"
        more = "—" if pw.get("more_per_arm") is None else f"{pw['more_per_arm']:,}"
        days = "—" if pw.get("days") is None else str(pw["days"])
        needed = "—" if pw.get("needed_per_arm") is None else f"{pw['needed_per_arm']:,}"
        tr, ct = shown(comp["treatment"]), shown(comp["control"])
        console.print(f"  {tr} vs {ct}: labelled positives {pw['n_treatment']:,} vs "
                      f"{pw['n_control']:,} ({rate_s} per arm per day) · minimum detectable gain "
                      f"{_num(pw.get('mde'))} · target {_num(pw.get('target_diff'))} needs "
                      f"{needed} per arm: "
                      f"{more} more (~{days} days)")
