"""Terminal rendering of the calibration and slices documents (drift_readout) with rich tables."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from .render import fmt_rate, shown


def _f(v: float | None, digits: int = 3) -> str:
    return "—" if v is None else f"{v:.{digits}f}"


def _est(e: dict[str, Any], digits: int = 3) -> str:
    """'~0.712 [0.650, 0.770]' for an estimate (the ~ marks label-free, estimated values)."""
    if e.get("value") is None:
        return "—"
    return f"~{e['value']:.{digits}f} [{_f(e['low'], digits)}, {_f(e['high'], digits)}]"


def _head(doc: dict[str, Any], what: str) -> str:
    w = doc["window"]
    v = doc.get("variant")
    variant = f" · variant {shown(v)}" if v else ""
    return (f"[bold]{what}[/bold] · {shown(doc['model'])}{variant} · {w['start']} → {w['end']} "
            f"({w['label']}, {w['n']:,} predictions, {w['labelled']:,} labelled)")


def render_calibration(doc: dict[str, Any], console: Console) -> None:
    """Reliability table, ECE vs noise floor, Brier decomposition, temperature, base rate, early warning."""
    console.print(_head(doc, "calibration"))
    cal = doc["calibration"]
    t = Table(title="reliability (equal-width bins)", title_justify="left")
    for col in ("bin", "n", "mean score", "observed [95 % Wilson]"):
        t.add_column(col, justify="right")
    for b in cal["reliability"]["width"]["bins"]:
        t.add_row(f"[{b['low']:.1f}, {b['high']:.1f})", f"{b['n']:,}", _f(b["mean_score"]), fmt_rate(b["observed"]))
    console.print(t)
    s = Table(title="calibration summary", title_justify="left")
    for col in ("", "equal-width", "equal-mass"):
        s.add_column(col, justify="right")
    nf = cal["noise_floor"]
    s.add_row("ECE", _f(cal["ece"]["width"], 4), _f(cal["ece"]["mass"], 4))
    s.add_row("ECE noise floor (95 %)", _f(nf["width"].get("p95"), 4), _f(nf["mass"].get("p95"), 4))
    console.print(s)
    br = cal["brier"]
    console.print(f"Brier {_f(br.get('brier'), 4)} = reliability {_f(br.get('reliability'), 4)} − resolution "
                  f"{_f(br.get('resolution'), 4)} + uncertainty {_f(br.get('uncertainty'), 4)} · log loss "
                  f"{_f(cal.get('log_loss'), 4)}")
    tau = cal["temperature"]
    if tau.get("tau") is not None:
        console.print(f"temperature τ = {tau['tau']:.3f} (p → σ(logit(p)/τ)): log loss {_f(tau.get('log_loss_before'), 4)}"
                      f" → {_f(tau.get('log_loss_after'), 4)}, ECE {_f(tau.get('ece_before'), 4)} → "
                      f"{_f(tau.get('ece_after'), 4)}")
    b = doc["base_rate"]
    prev = b["prevalence"]
    ref_s = "—" if prev["reference"] is None else f"{prev['reference']:.4f}"
    ip = b["implied_precision"]
    console.print(f"\n[bold]base rate[/bold]: prevalence {fmt_rate(prev['current'], 4)} vs reference {ref_s}; "
                  f"recall {_f(b['recall']['value'])} and FPR {_f(b['fpr']['value'], 4)} ({b['source']}) imply "
                  f"precision {_f(ip['value'])} [{_f(ip['low'])}, {_f(ip['high'])}] at the current prevalence "
                  f"({_f(b['implied_precision_at_reference'])} at the reference's); observed "
                  f"{fmt_rate(b['observed_precision'])}")
    ew = doc["early_warning"]
    console.print(f"\n[bold]early warning[/bold] ([italic]estimated[/italic] from the scores of {ew['n']:,} predictions "
                  f"without a label, assuming calibration): recall {_est(ew['recall'])}, precision "
                  f"{_est(ew['precision'])}, prevalence {_est(ew['prevalence'], 4)}; alert rate "
                  f"{fmt_rate(ew['alert_rate'])}")
    m = doc.get("matured") or {}
    if m.get("comparison"):
        w = m["window"]
        mt = m["maturity"]
        t2 = Table(title=f"estimated vs realised · {w['start']} → {w['end']} (one maturity period, {mt['label']} "
                         f"by {mt['method']}, earlier; label coverage {fmt_rate(m['comparison']['coverage'])})",
                   title_justify="left")
        for col in ("metric", "estimated (scores)", "realised (labels)", "error", "inside interval"):
            t2.add_column(col, justify="right")
        for row in m["comparison"]["metrics"]:
            inside = row["within_interval"]
            t2.add_row(row["metric"], _est(row["estimated"]), fmt_rate(row["realised"]), _f(row["error"]),
                       "—" if inside is None else ("yes" if inside else "[yellow]no[/yellow]"))
        console.print(t2)
    render_calibrated(doc.get("calibrated"), console)
    console.print("[dim]~ estimated: label-free, valid if the scores are calibrated; * indicative: n < 30[/dim]")


def render_calibrated(c: dict[str, Any] | None, console: Console) -> None:
    """The estimate from scores calibrated on the reference's labels, its trust, and its matured check."""
    if c is None:
        return
    trust = "trusted" if c["trusted"] else "[bold red]NOT TRUSTED[/bold red]: " + ", ".join(c["reasons"])
    console.print(f"\n[bold]calibrated estimate[/bold] ([italic]estimated[/italic] from the scores of all {c['n']:,} "
                  f"predictions, calibrated on the reference's labels; assumes its score-label relation): recall "
                  f"{_est(c['recall'])}, precision {_est(c['precision'])}, FPR {_est(c['fpr'], 4)}, prevalence "
                  f"{_est(c['prevalence'], 4)} — {trust}")
    m = c.get("matured")
    if m and m["metrics"]:
        t = Table(title="calibrated estimate vs realised, one maturity period earlier"
                        + (" — [bold red]contradicted by matured labels[/bold red]" if m["contradicted"] else ""),
                  title_justify="left")
        for col in ("metric", "estimated (calibrated)", "realised (labels)", "error", "inside interval"):
            t.add_column(col, justify="right")
        for row in m["metrics"]:
            inside = row["within_interval"]
            t.add_row(row["metric"], _est(row["estimated"]), fmt_rate(row["realised"]), _f(row["error"]),
                      "—" if inside is None else ("yes" if inside else "[yellow]no[/yellow]"))
        console.print(t)


def render_slices(doc: dict[str, Any], console: Console) -> None:
    """One table per slice feature, then the worst slices against the targets."""
    console.print(_head({**doc, "variant": None}, "slices"))
    if doc.get("note"):
        console.print(f"[yellow]{shown(doc['note'])}[/yellow]")
    tg = doc["targets"]
    for feat in doc["features"]:
        t = Table(title=shown(feat["feature"]), title_justify="left")
        for col in ("value", "predictions", "recall", "FPR", "precision", "alert rate", "shortfall"):
            t.add_column(col, justify="right")
        for s in feat["values"]:
            short = s["shortfall"]
            mark = "" if short is None or short <= 0 else f" [red]{s['shortfall_metric']}[/red]"
            t.add_row(shown(s["value"]) + ("*" if s["indicative"] else ""), f"{s['counts']['predictions']:,}",
                      fmt_rate(s["recall"]), fmt_rate(s["fpr"]), fmt_rate(s["precision"]), fmt_rate(s["alert_rate"]),
                      _f(short) + mark)
        console.print(t)
        if feat.get("note"):
            console.print(f"[yellow]note:[/yellow] {shown(feat['note'])}")
    if doc["worst"]:
        console.print(f"[bold]worst slices[/bold] (interval beyond recall {tg['recall']} / FPR {tg['fpr']}):")
        for s in doc["worst"]:
            m = s["shortfall_metric"]
            console.print(f"  {shown(s['feature'])}={shown(s['value'])}: {m} {fmt_rate(s[m])}, "
                          f"{s['shortfall']:.3f} beyond target")
    else:
        console.print(f"no slice's interval lies beyond the targets (recall {tg['recall']}, FPR {tg['fpr']})")
    console.print("[dim]* indicative: fewer than 30 labelled predictions. shortfall = target recall − recall upper "
                  "bound, or FPR lower bound − target FPR (the larger).[/dim]")
