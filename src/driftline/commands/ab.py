"""`driftline ab`: the A/B readout of model variants (split or shadow) as tables and a verdict, or JSON."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.console import Console

from ..context import Context, parse_window, seed_number
from ..numbers import (MISSING, count, counted, diff, duration, fixed, indicative_used, interval, money, percent, prop,
                       pvalue, ratio)
from .render import fmt_rate, footnote_if, shown
from .prose import say
from .tables import Col, print_groups, print_table
from .query import add_matured_arg, add_window_args, check_window_args, window_end
from .which_model import pick_model

METRICS = (("recall", "recall"), ("fpr", "FPR"), ("precision", "precision"), ("alert_rate", "alert rate"))
COST_METHODS = {"mid_p_mover": "mid-p, MOVER", "paired_bootstrap": "paired bootstrap"}
"""The cost difference's interval as the README and the report name it (the JSON keeps the method's key; tryout:
the terminal row read `cost / 1,000 (mid_p_mover)`)."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ab", help="A/B readout: arms, differences with intervals, SRM, label balance, power")
    add_window_args(p)
    p.add_argument("--seed", type=seed_number, default=0, help="seed of the paired bootstrap (shadow mode)")
    add_matured_arg(p)
    p.set_defaults(func=cmd_ab)


def cmd_ab(ctx: Context, args: argparse.Namespace) -> int:
    from ..readouts.ab import ABQuery, ab_document  # lazy: the parser imports every command module

    check_window_args(ctx, args)
    model = pick_model(ctx, args.model)
    q = ABQuery(model=model, window_s=parse_window(args.window, ctx.config), at=window_end(ctx, args, model),
                seed=args.seed)
    doc = ab_document(ctx.store(), ctx.config, q)
    if args.json:
        print(json.dumps(doc, allow_nan=False))
    else:
        render_ab(doc, ctx.console)
    return 0


def _lift(v: float | None, lo: float | None, hi: float | None) -> str:
    """'+8.2 % [-19.0 %, +40.1 %]': a relative change."""
    if v is None:
        return MISSING
    iv = "" if lo is None or hi is None else f" [{percent(lo, signed=True)}, {percent(hi, signed=True)}]"
    return percent(v, signed=True) + iv


def render_ab(doc: dict[str, Any], console: Console) -> None:
    """Print the readout: arms, comparisons (and paired tests), health checks, power, verdict."""
    w = doc["window"]
    span = "nothing stored" if w["start"] is None else f"{w['start']} → {w['end']}"
    console.print(f"[bold]A/B readout[/bold] · {shown(doc.get('model') or 'all models')} · {span} "
                  f"({w['label']}) · {shown(doc['design_text'])}")
    for note in doc.get("notes", []):
        say(console, shown(note), "[yellow]note:[/yellow] ")
    if doc.get("label_maturity"):
        say(console, shown(doc['label_maturity']['note']), "[yellow]note:[/yellow] ")
    if doc["arms"]:
        _arms_table(doc, console)
    for comp in doc["comparisons"]:
        _comparison_table(doc, comp, console)
        if comp.get("independent_intervals"):
            say(console, shown(comp["independent_intervals"]["text"]), "[yellow]note:[/yellow] ")
        if comp.get("paired") is not None:
            _paired_table(comp, console, doc.get("currency"))
    if doc["comparisons"]:
        _health(doc, console)
        _power(doc, console)
    console.print(f"\n[bold]Verdict:[/bold] {shown(doc['verdict'])}")
    footnote_if(console, indicative_used([[a[k] for k, _ in METRICS] + [a["label_coverage"]]
                                          for a in doc["arms"].values()]))
    console.print(f"[dim]Intervals 95 %: Wilson per arm, Newcombe for differences ({cost_methods(doc)}); anytime = "
                  "always-valid asymptotic confidence sequence, safe under repeated looks when the window covers the "
                  "experiment from its start.[/dim]")


def cost_methods(doc: dict[str, Any]) -> str:
    """The footnote's words for the cost intervals: MOVER for a split test's differences, the paired bootstrap over
    the ids scored by both in shadow mode (the footnote said MOVER there too, under a table whose cost row read
    paired_bootstrap)."""
    methods = {(c.get("cost_per_1000") or {}).get("method") for c in doc.get("comparisons", [])} - {None}
    if methods == {"paired_bootstrap"}:
        return "costs: mid-p per arm, a paired bootstrap over the ids scored by both for differences"
    if "paired_bootstrap" in methods:
        return "costs: mid-p per arm, MOVER or a paired bootstrap for differences, as each row names"
    return "costs: mid-p per arm, MOVER for differences"


def _arms_table(doc: dict[str, Any], console: Console) -> None:
    """One row per measure and one column per arm: every measure shows (an arm's ten interval cells side by side
    would need ~250 columns), and more arms than the width holds go to a further table (`print_groups`)."""
    arms = doc["arms"]
    cur = doc.get("currency", "")
    versions = "; ".join(f"{a} {','.join(x.get('model_versions', [])) or MISSING}" for a, x in arms.items())
    costs = doc.get("costs_configured", True)
    measures: list[tuple[str, list[str]]] = [
        ("predictions (share)", [f"{count(x['predictions'])} ({prop(x['expected_share'])})" for x in arms.values()]),
        ("labelled / positives", [f"{count(x['labelled'])} / {count(x['positives'])}" for x in arms.values()]),
        *[(name, [fmt_rate(x[key]) for x in arms.values()]) for key, name in METRICS],
        ("label coverage", [fmt_rate(x["label_coverage"]) for x in arms.values()]),
        ("label delay p50 / p95", [f"{duration(x['label_delay_seconds'].get('p50'))} / "
                                   f"{duration(x['label_delay_seconds'].get('p95'))}" for x in arms.values()]),
    ]
    if costs:
        measures += [(f"cost / 1,000 ({cur})", [money(x["cost_per_1000"]["value"], x["cost_per_1000"]["low"],
                                                      x["cost_per_1000"]["high"], currency=cur) for x in arms.values()]),
                     (f"cost / month ({cur})", [money(x["monthly"]["cost"]["value"], currency=cur) for x in arms.values()])]
    cols = [Col("", "left")] + [Col(shown(a)) for a in arms]
    print_groups(console, cols, [[name, *cells] for name, cells in measures],
                 title=f"arms (control arm '{shown(doc['control'])}'; versions {shown(versions)}; "
                       + ("share: the expected fraction of the predictions the arm scores)" if doc.get("design") == "shadow"
                          else "share: the expected share of traffic)"))
    if not costs:
        console.print("cost: costs not configured (see `costs:` in the config)")


def _comparison_table(doc: dict[str, Any], comp: dict[str, Any], console: Console) -> None:
    tr, ct = shown(comp["treatment"]), shown(comp["control"])
    cols = [Col("metric", "left"), Col("diff [95 % Newcombe]"), Col("p", drop=4), Col("p Holm"),
            Col("relative lift", drop=3), Col("anytime [95 %]", drop=2), Col(f"counts {tr} vs {ct}", drop=1)]
    rows = []
    for key, name in METRICS:
        m = comp["metrics"][key]
        lift = m["rel_lift"]
        c = m["counts"]
        mark = " ✓" if m["seq_excludes_zero"] else ""
        rows.append([name, diff(m["diff"], m["low"], m["high"]), pvalue(m["p_value"]), pvalue(m["p_holm"]),
                     _lift(lift["value"], lift["low"], lift["high"]), interval(m["seq_low"], m["seq_high"]) + mark,
                     f"{ratio(c['treatment']['k'], c['treatment']['n'])} vs "
                     f"{ratio(c['control']['k'], c['control']['n'])}"])
    cd = comp["cost_per_1000"]
    if cd is None:
        rows.append(["cost", "costs not configured", "", "", "", "", ""])
    else:
        method = cd.get("method")
        rows.append([f"cost / 1,000 ({COST_METHODS.get(method, method)})",
                     money(cd["diff"], cd["low"], cd["high"], signed=True, currency=doc.get("currency")),
                     "", "", "", "", ""])
    print_table(console, cols, rows, title=f"{tr} − {ct}")


def _paired_table(comp: dict[str, Any], console: Console, currency: str | None) -> None:
    pr = comp["paired"]
    tr, ct = shown(comp["treatment"]), shown(comp["control"])
    cols = [Col("", "left"), Col(f"{tr} only", drop=2), Col(f"{ct} only", drop=2), Col("exact McNemar p", drop=3),
            Col("p Holm"), Col("paired bootstrap diff [95 %]")]
    b = pr["bootstrap"]
    rows = []
    for key, name in (("recall", "caught positives"), ("fpr", "flagged negatives")):
        s = pr[key]
        boot = b.get(key)
        bs = MISSING if boot is None else diff(boot["diff"], boot["low"], boot["high"])
        rows.append([name, count(s["treatment_only"]), count(s["control_only"]), pvalue(s["p_value"]),
                     pvalue(s["p_holm"]), bs])
    bp = b["precision"]
    rows.append(["precision", "", "", "", "", diff(bp["diff"], bp["low"], bp["high"])])
    bc = b.get("cost_per_1000")
    if bc is not None:
        rows.append(["cost / 1,000", "", "", "", "", money(bc["diff"], bc["low"], bc["high"], signed=True,
                                                          currency=currency)])
    print_table(console, cols, rows, title=f"shadow pairs: {count(pr['pairs'])} ids scored by both (unpaired: {ct} "
                f"{count(pr['unpaired']['control'])}, {tr} {count(pr['unpaired']['treatment'])})")


def _health(doc: dict[str, Any], console: Console) -> None:
    srm = doc["srm"]
    obs, exp = srm.get("observed_share") or {}, srm.get("expected_share") or {}
    shares = ", ".join(f"{shown(a)} {prop(obs.get(a) or 0)} (expected {prop(exp[a])})" for a in exp)
    status = "[red]MISMATCH[/red]" if srm["mismatch"] else "[green]ok[/green]"
    chi2 = "—" if srm.get("chi2") is None else fixed(srm["chi2"], 2, sep=True)
    console.print("\n[bold]health checks[/bold]")
    say(console, f"{status} · χ² = {chi2}, p = {pvalue(srm.get('p_value'))} · {shares}", "  sample ratio: ")
    for comp in doc["comparisons"]:
        lb = comp["label_balance"]
        cov = ", ".join(f"{shown(a)} {fmt_rate(r)}" for a, r in lb["coverage"].items())
        delay = ", ".join(f"{shown(a)} {duration(v)}" for a, v in lb["median_delay_s"].items())
        ok = {"ok": "[green]ok[/green]", "warning": "[yellow]WARNING[/yellow]"}.get(
            lb["status"], f"[yellow]cannot judge[/yellow] ({shown(lb['cannot_judge'] or '')})")
        tr, ct = shown(comp["treatment"]), shown(comp["control"])
        delays = "" if lb.get("delay_p_value") is None and not any(lb["median_delay_s"].values()) else \
            f" · median delay {delay} (p = {pvalue(lb.get('delay_p_value'))})"
        say(console, f"{ok} · coverage {cov}{delays}", f"  label balance {tr} vs {ct}: ")
        for wtext in lb["warnings"]:
            say(console, shown(wtext), "    [yellow]![/yellow] ")
        pr = comp.get("paired")
        if pr is not None and pr["labels_follow_control"]["warning"]:
            say(console, f"labels follow {ct}'s flags (see verdict)", "    [yellow]![/yellow] ")


def _power(doc: dict[str, Any], console: Console) -> None:
    console.print("\n[bold]power (recall, 80 %, two-sided α = 0.05)[/bold]")
    for comp in doc["comparisons"]:
        pw = comp["power"]
        per_day = pw.get("positives_per_arm_per_day")
        rate_s = MISSING if per_day is None else fixed(per_day, 1, sep=True)
        more = count(pw.get("more_per_arm"))
        days = f"~{MISSING} days" if pw.get("days") is None else f"~{counted(pw['days'], 'day')}"
        needed = count(pw.get("needed_per_arm"))
        tr, ct = shown(comp["treatment"]), shown(comp["control"])
        if pw.get("mde") is None and not (pw["n_treatment"] and pw["n_control"]):
            say(console, "power cannot be computed until labels arrive (no labelled positives yet in "
                         + ("either arm" if not (pw["n_treatment"] or pw["n_control"])
                            else (ct if not pw["n_control"] else tr)) + ")", f"  {tr} vs {ct}: ")
            continue
        mc, mt = pw.get("more_control"), pw.get("more_treatment")
        if mc is not None and mt is not None and abs(mc - mt) > 0.1 * max(mc, mt):  # unequal split: per arm
            say(console, f"labelled positives {count(pw['n_treatment'])} vs {count(pw['n_control'])} · minimum "
                         f"detectable gain {prop(pw.get('mde'))} · target {prop(pw.get('target_diff'))} needs "
                         f"{count(mt)} more in {tr} and {count(mc)} in {ct} at the current split ({days})",
                f"  {tr} vs {ct}: ")
            _delay_basis(console, comp)
            continue
        say(console, f"labelled positives {count(pw['n_treatment'])} vs "
                     f"{count(pw['n_control'])} ({rate_s} per arm per day so far) · minimum detectable gain "
                     f"{prop(pw.get('mde'))} · target {prop(pw.get('target_diff'))} needs "
                     f"{needed} per arm: "
                     f"{more} more ({days})", f"  {tr} vs {ct}: ")
        _delay_basis(console, comp)


def _delay_basis(console: Console, comp: dict[str, Any]) -> None:
    """What the days assume (JSON `power.label_delay`): the labelled positives a day of traffic brings once
    labelled, and those the stored predictions waiting for labels will bring with no more traffic; a warning for
    an arm whose data cannot show its longer label delays yet (`warnings`)."""
    basis = comp["power"].get("label_delay")
    if not basis:
        return
    if comp["power"].get("days") is not None:
        _days_basis(console, comp, basis)
    for wtext in basis.get("warnings", []):
        say(console, shown(wtext), "    [yellow]![/yellow] ")


def _days_basis(console: Console, comp: dict[str, Any], basis: dict[str, Any]) -> None:
    """The days line: the positives still to come per arm and those a day of new traffic brings once labelled."""
    arms = (comp["treatment"], comp["control"])
    per_day = " and ".join(f"{fixed(basis['positives_per_day'][a], 1, sep=True)} in {shown(a)}" for a in arms)
    pending = " and ".join(f"~{count(round(basis['pending_positives'][a]))} in {shown(a)}" for a in arms)
    say(console, f"counting the labelled positives still to come from predictions already stored ({pending}, with "
                 f"no more traffic) and {per_day} a day of new traffic once labelled; assumes {basis['assumes']}",
        "    days: ")
