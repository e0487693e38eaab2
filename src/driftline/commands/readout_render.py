"""Terminal rendering of the calibration and slices documents (drift_readout) with rich tables."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from .. import numbers
from ..numbers import count, counted, estimate as _est, indicative_used, prop, stat
from .render import DISPLAY, NOTHING_STORED, fmt_rate, footnote_if, nothing_stored, shown
from .prose import say
from .tables import Col, print_table

_INSIDE = {None: "—", True: "yes", False: "[yellow]no[/yellow]"}
NO_LABELS = "no labelled predictions in this window yet: {what} need labels"


def _head(doc: dict[str, Any], what: str) -> str:
    w = doc["window"]
    v = doc.get("variant")
    variant = f" · variant {shown(v)}" if v else ""
    if doc.get("scope"):  # shadow mode: the production arm only (readouts.headline)
        variant += f" · {doc['scope']['text']}"
    return (f"[bold]{what}[/bold] · {shown(doc['model'])}{variant} · {w['start']} → {w['end']} "
            f"({w['label']}, {counted(w['n'], 'prediction')}, {count(w['labelled'])} labelled)")


def render_calibration(doc: dict[str, Any], console: Console) -> None:
    """Reliability table, ECE vs noise floor, Brier decomposition, temperature, base rate, early warning."""
    if nothing_stored(doc, console):
        return
    console.print(_head(doc, "calibration"))
    if doc.get("note"):
        say(console, shown(doc["note"]), "[yellow]note:[/yellow] ")
    cal = doc["calibration"]
    if doc["window"]["labelled"]:
        _maturity_note(doc, console)
        _calibration_tables(cal, console)
    else:
        say(console, NO_LABELS.format(what="reliability, ECE and the Brier score"))
        _maturity_note(doc, console)
    used: list[Any] = [b["observed"] for b in cal["reliability"]["width"]["bins"]]
    b = doc["base_rate"]
    prev = b["prevalence"]
    ip = b["implied_precision"]
    used += [prev["current"], b["observed_precision"]]
    if (prev["current"] or {}).get("n", 0) == 0 and (b["observed_precision"] or {}).get("n", 0) == 0:
        console.print("\n[bold]base rate[/bold]: needs labelled predictions in the window")
        _rest_of_calibration(doc, console, used)
        return
    console.print(f"\n[bold]base rate[/bold]: prevalence {fmt_rate(prev['current'])} vs reference "
                  f"{prop(prev['reference'])}; recall {prop(b['recall']['value'])} and FPR {prop(b['fpr']['value'])} "
                  f"({_source(b)}) imply precision {prop(ip['value'])} {numbers.interval(ip['low'], ip['high'])} "
                  "at the "
                  f"current prevalence ({prop(b['implied_precision_at_reference'])} at the reference's); observed "
                  f"{fmt_rate(b['observed_precision'])}")
    _rest_of_calibration(doc, console, used)


def _source(base_rate: dict[str, Any]) -> str:
    """Where the base-rate effect's recall and FPR come from: the reference, the window, or (implicit negatives) the
    window's matured part, which `metrics` does not use for recall (it reads the whole window's)."""
    if base_rate["source"] == "current" and base_rate.get("over") == "matured part":
        return "this window's matured part"
    return base_rate["source"]


def _maturity_note(doc: dict[str, Any], console: Console) -> None:
    """The label-maturity note (why the window has few labels, which window to read) when there is one."""
    if doc.get("label_maturity"):
        say(console, shown(doc["label_maturity"]["note"]), "[yellow]note:[/yellow] ")


def _calibration_tables(cal: dict[str, Any], console: Console) -> None:
    """Reliability table, ECE against its noise floor, the Brier decomposition and the temperature."""
    bins = cal["reliability"]["width"]["bins"]
    print_table(console, [Col("bin"), Col("n"), Col("mean score"), Col("observed [95 % Wilson] n")],
                [[f"[{numbers.fixed(b['low'], 1)}, {numbers.fixed(b['high'], 1)})", count(b["n"]),
                  prop(b["mean_score"]), fmt_rate(b["observed"])]
                 for b in bins], title="reliability (equal-width bins)")
    nf = cal["noise_floor"]
    print_table(console, [Col(""), Col("equal-width"), Col("equal-mass")], [
        ["ECE", stat(cal["ece"]["width"]), stat(cal["ece"]["mass"])],
        ["ECE noise floor (95 %)", stat(nf["width"].get("p95")), stat(nf["mass"].get("p95"))]],
        title="calibration summary")
    console.print(f"{brier_equation(cal['brier'])} · log loss {stat(cal.get('log_loss'))}")
    tau = cal["temperature"]
    if tau.get("tau") is not None:
        console.print(f"temperature τ = {prop(tau['tau'])} (p → σ(logit(p)/τ)): log loss "
                      f"{stat(tau.get('log_loss_before'))}"
                      f" → {stat(tau.get('log_loss_after'))}, ECE {stat(tau.get('ece_before'))} → "
                      f"{stat(tau.get('ece_after'))}" + (at_bound_note() if tau.get("at_bound") else ""))


def at_bound_note() -> str:
    """Said after a temperature pinned at a search bound (JSON `at_bound`), e.g. scores of 0 and 1 that are wrong
    (imported here, not at the top: analysis.calibration brings scipy, which `--help` must not load)."""
    from ..analysis.calibration import TAU_BOUNDS

    return (f" — at the edge of the range searched ({TAU_BOUNDS[0]:g} to {TAU_BOUNDS[1]:g}): the best τ lies beyond "
            "it, so read it as a direction, not a fitted value")


def brier_equation(br: dict[str, Any]) -> str:
    """The Brier decomposition as an equation that balances: the three Murphy terms plus the within-bin term.

    The binned decomposition is exact only with within_bin_variance − within_bin_covariance (the scores' spread
    inside each bin); without it the printed terms did not add up to the printed Brier score.
    """
    text = (f"Brier {stat(br.get('brier'))} = reliability {stat(br.get('reliability'))} − resolution "
            f"{stat(br.get('resolution'))} + uncertainty {stat(br.get('uncertainty'))}")
    wbv, wbc = br.get("within_bin_variance"), br.get("within_bin_covariance")
    if wbv is None or wbc is None:
        return text
    within = wbv - wbc
    return f"{text} {'−' if within < 0 else '+'} within-bin {stat(abs(within))}"


def _rest_of_calibration(doc: dict[str, Any], console: Console, used: list[Any]) -> None:
    """Early warning, the estimate against matured labels, the calibrated estimate and the footnotes."""
    from ..readouts.maturity import method_text  # scipy: imported by the calibration command only

    ew = doc["early_warning"]
    used.append(ew["alert_rate"])
    console.print(f"\n[bold]early warning[/bold] ([italic]estimated[/italic] from the scores of {count(ew['n'])} "
                  f"predictions without a label, assuming calibration): recall {_est(ew['recall'])}, precision "
                  f"{_est(ew['precision'])}, prevalence {_est(ew['prevalence'])}; alert rate "
                  f"{fmt_rate(ew['alert_rate'])}")
    m = doc.get("matured") or {}
    if m.get("comparison"):
        w = m["window"]
        mt = m["maturity"]
        rows = m["comparison"]["metrics"]
        used += [m["comparison"]["coverage"]] + [row["realised"] for row in rows]
        _vs_table(console, "estimated (scores)", rows,
                  f"estimated vs realised · {w['start']} → {w['end']} (one maturity period earlier: "
                  f"{numbers.duration(mt['seconds'])} by the {method_text(mt['method'])}; label coverage "
                  f"{fmt_rate(m['comparison']['coverage'])})")
    c = doc.get("calibrated")
    render_calibrated(c, console)
    if c and c.get("matured") and c["matured"]["metrics"]:
        used += [row["realised"] for row in c["matured"]["metrics"]]
    console.print("[dim]~ estimated: label-free, valid if the scores are calibrated[/dim]")
    footnote_if(console, indicative_used(used))


def _vs_table(console: Console, estimated: str, rows: list[dict[str, Any]], title: str) -> None:
    """Estimate against realised rate, its error and whether the realised value lies inside the interval."""
    cols = [Col("metric"), Col(estimated), Col("realised (labels) n"), Col("error", drop=1), Col("inside")]
    print_table(console, cols, [[DISPLAY.get(row["metric"], row["metric"]), _est(row["estimated"]), fmt_rate(row["realised"]),
                                 numbers.diff(row["error"]), _INSIDE[row["within_interval"]]] for row in rows],
                title=title)


def render_calibrated(c: dict[str, Any] | None, console: Console) -> None:
    """The estimate from scores calibrated on the reference's labels, its trust, and its matured check."""
    if c is None:
        return
    from ..analysis.calibrated import reason_text  # numpy: only when there is an estimate to show

    trust = ("trusted" if c["trusted"]
             else "[bold red]NOT TRUSTED[/bold red]: " + "; ".join(reason_text(r) for r in c["reasons"]))
    if all(_missing(c.get(k)) for k in ("recall", "precision", "fpr", "prevalence")):
        say(console, f"\n[bold]calibrated estimate[/bold]: none for these {count(c['n'])} predictions — {trust}")
        return
    console.print(f"\n[bold]calibrated estimate[/bold] ([italic]estimated[/italic] from the scores of all "
                  f"{count(c['n'])} "
                  f"predictions, calibrated on the reference's labels; assumes its score-label relation): recall "
                  f"{_est(c['recall'])}, precision {_est(c['precision'])}, FPR {_est(c['fpr'])}, prevalence "
                  f"{_est(c['prevalence'])} — {trust}")
    m = c.get("matured")
    if m and m["metrics"]:
        _vs_table(console, "estimated (calibrated)", m["metrics"],
                  "calibrated estimate vs realised, one maturity period earlier"
                  + (" — [bold red]contradicted by matured labels[/bold red]" if m["contradicted"] else ""))
    w = c.get("window_labels")
    if w and w["contradicted"]:
        _vs_table(console, "estimated (calibrated)", w["metrics"], "calibrated estimate of this window's labelled "
                  "predictions vs their labels — [bold red]contradicted[/bold red]")


def _missing(r: dict[str, Any] | None) -> bool:
    """An estimate without a value (no reference, no labels to calibrate on)."""
    return r is None or r.get("value") is None


SLICES_TOP = 20
"""Values shown per slice feature (and worst slices) in the terminal by default (`slices --top`): a feature of 10,000
languages printed ~12,650 lines (toxicity tryout); the values are sorted worst first, so the first ones are those
to read, and `--json` lists every one."""


def _more(hidden: int, what: str, console: Console) -> None:
    """The dim line under a list cut at `--top`: how many more, and how to see them."""
    if hidden > 0:
        console.print(f"[dim]… {count(hidden)} more {what} not shown (`--top 0` shows all; `--json` lists them)[/dim]")


def render_slices(doc: dict[str, Any], console: Console, top: int = SLICES_TOP) -> None:
    """One table per slice feature, then the worst slices against the targets; `top` > 0 shows the first `top`
    values of each (worst first) and says how many more there are."""
    if nothing_stored(doc, console):
        hint = (doc.get("note") or "").removeprefix(NOTHING_STORED).removeprefix("; ")
        if hint:  # e.g. no slice features configured: worth saying before any data arrives
            say(console, f"[yellow]{shown(hint)}[/yellow]")
        return
    console.print(_head({**doc, "variant": None}, "slices"))
    if doc.get("note"):
        say(console, f"[yellow]{shown(doc['note'])}[/yellow]")
    labelled = doc["window"]["labelled"]
    if labelled:
        _maturity_note(doc, console)
    tg = doc["targets"]
    cols = [Col("value"), Col("predictions", drop=3), Col("recall"), Col("FPR", drop=1), Col("precision", drop=2),
            Col("alert rate", drop=4), Col("shortfall")]
    used = False
    for feat in doc["features"]:
        rows = []
        values = feat["values"][:top] if top > 0 else feat["values"]
        for s in values:
            short = s["shortfall"]
            mark = "" if short is None or short <= 0 else f" [red]{s['shortfall_metric']}[/red]"
            used = used or bool(s["indicative"]) or indicative_used([s["recall"], s["fpr"], s["precision"]])
            rows.append([shown(s["value"]) + ("*" if s["indicative"] else ""), count(s["counts"]["predictions"]),
                         fmt_rate(s["recall"]), fmt_rate(s["fpr"]), fmt_rate(s["precision"]),
                         fmt_rate(s["alert_rate"]), prop(short) + mark])
        print_table(console, cols, rows, title=shown(feat["feature"]))
        _more(len(feat["values"]) - len(values), f"values of {shown(feat['feature'])}", console)
        if feat.get("note"):
            say(console, shown(feat['note']), "[yellow]note:[/yellow] ")
    lines = " / ".join(f"{name} {numbers.line(tg[key])}" for key, name in (("recall", "recall"), ("fpr", "FPR"))
                       if tg.get(key) is not None)
    if not lines:
        console.print("no slice ranking: no recall or FPR target agreed (set `targets:` or a model-wide "
                      "recall/fpr trigger)")
    elif not labelled:
        say(console, NO_LABELS.format(what="recall, FPR and precision per slice, and the ranking against the "
                                           f"targets ({lines}),"))
        _maturity_note(doc, console)
    elif doc["worst"]:
        console.print(f"[bold]worst slices[/bold] (interval beyond {lines}):")
        worst = doc["worst"][:top] if top > 0 else doc["worst"]
        for s in worst:
            m = s["shortfall_metric"]
            say(console, f"{m} {fmt_rate(s[m])}, {prop(s['shortfall'])} beyond target",
                f"  {shown(s['feature'])}={shown(s['value'])}: ")
        _more(len(doc["worst"]) - len(worst), "worst slices", console)
    else:
        console.print(f"no slice's interval lies beyond the targets ({lines})")
    if lines and labelled and doc.get("multiplicity"):
        say(console, shown(doc["multiplicity"]), "[yellow]note:[/yellow] ")
    footnote_if(console, used, "[dim]* indicative: fewer than 30 labelled predictions.[/dim]")
    if doc["worst"]:
        console.print("[dim]shortfall = target recall − recall upper bound, or FPR lower bound − target FPR (the "
                      "larger).[/dim]")
