"""Terminal rendering of drift readouts and reference summaries, kept apart from the drift command handlers."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from ..numbers import MISSING, count, prop, pvalue, stat
from .render import fmt_rate, shown
from .prose import say
from .tables import Col, print_table


def _span(values: list[int]) -> str:
    """"a" when all equal, else "min–max" (thousands separated)."""
    lo, hi = min(values), max(values)
    return f"{lo:,}" if lo == hi else f"{lo:,}–{hi:,}"


SHOWN_NAMES = 20
"""Feature names listed in the terminal before "… and N more" (--json lists them all): junk names in events
(10,000 in a tryout) made a 1,153-line reference and a 20 KB drift footnote."""


def capped(names: list[str], limit: int = SHOWN_NAMES) -> str:
    """'a, b, c' or the first `limit` names and '… and N more (--json lists them)'."""
    head = ", ".join(names[:limit])
    return head if len(names) <= limit else f"{head} … and {len(names) - limit:,} more (--json lists them)"


def _print_dropped(console: Console, dropped: list[dict[str, Any]]) -> None:
    """The features a reference does not track, one line each up to SHOWN_NAMES, then a count by reason."""
    for item in dropped[:SHOWN_NAMES]:
        say(console, f"{shown(item['feature'])} ({item['reason']})", "  [yellow]not tracked:[/yellow] ")
    rest = dropped[SHOWN_NAMES:]
    if rest:
        reasons: dict[str, int] = {}
        for item in rest:
            reasons[item["reason"]] = reasons.get(item["reason"], 0) + 1
        why = ", ".join(f"{n:,} {r}" for r, n in sorted(reasons.items()))
        console.print(f"  [yellow]not tracked:[/yellow] … and {len(rest):,} more ({why}; --json lists them)")


def _print_seasons(console: Console, doc: dict[str, Any]) -> None:
    """One line on a seasonal reference: its seasonality and the reference hours and predictions per season."""
    seasons = doc.get("seasons")
    if not seasons:
        return
    hours = [s["hours"] for s in seasons["slices"]] or [0]
    ns = [s["n"] for s in seasons["slices"]] or [0]
    console.print(f"seasonality [bold]{doc['seasonality']}[/bold] (UTC): {len(seasons['slices'])} of "
                  f"{seasons['possible']} seasons seen, {_span(hours)} reference hours and {_span(ns)} predictions "
                  f"per season" + (f"; {seasons['unplaced_n']:,} predictions in buckets spanning several seasons "
                                   "(whole reference only)" if seasons["unplaced_n"] else ""))


def _render_multivariate(mv: dict[str, Any] | None, console: Console) -> None:
    """One line: the PCA reconstruction error of the window's sample vs the reference's, p-value, verdict."""
    if mv is None:
        return
    if mv.get("drifted") is None:
        console.print(f"multivariate (PCA reconstruction error): no verdict: {shown(mv.get('note') or '')}")
        return
    n = mv["n"]
    verdict = "[bold red]drifted[/bold red]" if mv["drifted"] else "not drifted"
    console.print(f"multivariate (PCA reconstruction error, {mv['components']} of {len(mv['columns'])} components): "
                  f"window {stat(mv['error'])} vs reference {stat(mv['reference_error'])} (ratio {stat(mv['ratio'])}, "
                  f"floor ±{stat(mv['noise_floor'])}) · p {pvalue(mv['p_value'])} · {verdict} · "
                  f"sampled n={count(n['window'])} vs {count(n['reference_calibration'])}")


# --- rendering -----------------------------------------------------------------------------------------
_SEVERITY = {"alert": "[red]alert[/red]", "warning": "[yellow]warning[/yellow]", "none": "none"}
DRIFT_COLS = [Col("feature", "left"), Col("kind", "left", drop=4), Col("PSI"), Col("JS", drop=1),
              Col("p adj (BH)"), Col("floor PSI / JS", drop=2), Col("severity", drop=3), Col("drifted"), Col("n", drop=5)]


def deciding_test(f: dict[str, Any]) -> tuple[str, float] | None:
    """The feature's test with the smallest BH-adjusted p — KS/χ² or the missing-share test — and that p: the one
    that can make the call, so a feature drifted by its missing share does not read "KS 0.57 · drifted yes"."""
    tests = [("KS" if f["kind"] == "numeric" else "χ²", (f.get("ks") or f.get("chi2") or {}).get("p_adjusted")),
             ("missing", (f.get("missing_share") or {}).get("p_adjusted"))]
    known = [(name, p) for name, p in tests if p is not None]
    return min(known, key=lambda t: t[1]) if known else None


def _drift_row(f: dict[str, Any]) -> list[str]:
    test = deciding_test(f)
    nf = f["noise_floor"]
    return [shown(f["feature"]), f["kind"], stat(f["psi"]), stat(f["js"]),
            MISSING if test is None else f"{test[0]} {pvalue(test[1])}",
            f"{stat(nf.get('psi'))} / {stat(nf.get('js'))}", _SEVERITY.get(f["severity"], f["severity"]),
            "[bold red]yes[/bold red]" if f["drifted"] else "no", count(f["n_current"])]


def _print_seasonality(console: Console, s: dict[str, Any]) -> None:
    """Which seasons the window was compared with, the reference hours behind them, and any fallback."""
    if s.get("seasonality", "none") == "none" or not s.get("seasons"):
        return
    used = s["seasons"]
    own = [u for u in used if u["fallback"] is None]
    span = _span([u["reference_hours"] for u in own] or [0])
    names = ", ".join(u["season"] for u in used[:4]) + (f", … ({len(used)} seasons)" if len(used) > 4 else "")
    console.print(f"seasonal reference ({s['seasonality']}, UTC): window seasons {names} compared with their own "
                  f"reference slices ({span} reference hours each; mixed reference "
                  f"n_eff={s['reference_n_effective']:,})")
    fb = s["fallback"]
    if fb["seasons"]:
        console.print(f"[yellow]fallback:[/yellow] {', '.join(fb['seasons'][:6])} ({fb['window_n']:,} window "
                      f"predictions) compared with the whole reference: {fb['rule']}")


def _print_missing(console: Console, features: list[dict[str, Any]], alpha: float) -> None:
    """One line per feature whose missing share changed significantly (BH-adjusted p < alpha): both shares."""
    for f in features:
        m = f.get("missing_share") or {}
        if m.get("p_adjusted") is not None and m["p_adjusted"] < alpha:
            say(console, shown(f"{f['feature']}: {prop(m['reference'])} of the reference's predictions → "
                               f"{prop(m['current'])} of the window's (p adj {pvalue(m['p_adjusted'])})"),
                "[yellow]missing values:[/yellow] ")


def _print_vanished(console: Console, features: list[dict[str, Any]]) -> None:
    """One line per categorical feature whose window lacks reference categories it should have held."""
    for f in features:
        gone = f.get("vanished_values") or []
        if gone:
            names = ", ".join(f"{v['value']} ({prop(v['reference_share'])} of the reference, ~{count(round(v['expected']))}"
                              " expected)" for v in gone[:5])
            say(console, shown(f"{f['feature']}: none in the window's {count(f['n_current'])} values: {names}"),
                "[yellow]vanished values:[/yellow] ")


def _print_new_values(console: Console, features: list[dict[str, Any]]) -> None:
    """One line per categorical feature with values the reference never saw: their share and the most frequent
    of them by name (they are otherwise only part of the `(other)` bin)."""
    for f in features:
        new = f.get("unseen_values") or []
        if not new or not f.get("unseen_share"):
            continue
        names = ", ".join(f"{v['value']} ({count(v['count'])})" for v in new)
        say(console, shown(f"{f['feature']}: {unseen_phrase(f)}: {names}"), "[yellow]new values:[/yellow] ")


def unseen_phrase(f: dict[str, Any]) -> str:
    """What a feature's unseen share means: exactly never seen, or (the reference remembered only its most frequent
    categories) at most that share, since the rarer reference values are not remembered."""
    b = f.get("unseen_bound")
    if not b:
        return f"{prop(f['unseen_share'])} of the window's values were never seen in the reference"
    of = f"of {count(b['reference_distinct'])} distinct" if b.get("reference_distinct") else "it had more"
    return (f"at most {prop(f['unseen_share'])} of the window's values were never seen in the reference: that share "
            f"is not among its {count(b['remembered'])} most frequent values ({of}; rarer ones are not remembered, "
            f"so some of these were seen)")


def untracked_item(v: dict[str, Any]) -> str:
    """'late_feat (11,354 values, 1.000 of the window's predictions)', or the bare name without counts."""
    if v.get("values") is None:
        return v["feature"]
    share = f", {prop(v['share'])} of the window's predictions" if v.get("share") is not None else ""
    return f"{v['feature']} ({count(v['values'])} values{share})"


def render_drift(doc: dict[str, Any], console: Console) -> None:
    """Ranked drift table: feature, kind, PSI, JS, adjusted p, noise floors, severity, drifted; then prevalence."""
    w, r = doc["window"], doc["reference"]
    variant = f" · variant {shown(doc['variant'])}" if doc["variant"] else ""
    if doc.get("scope"):  # shadow mode: the production arm only (readouts.headline)
        variant += f" · {doc['scope']['text']}"
    console.print(f"[bold]drift[/bold] · {shown(doc['model'])}{variant} · "
                  f"window {w['start']} → {w['end']} ({w['label']}, n={count(w['n'])}) vs reference {r['id']} "
                  f"({r['start']} → {r['end']}, n={count(r['n'])})")
    rows = [_drift_row(f) for f in doc["features"]]
    sections = []
    if doc["score"] is not None:
        sections.append(len(rows))
        rows.append(_drift_row({**doc["score"], "feature": "(score)"}))
    print_table(console, DRIFT_COLS, rows, sections=sections)
    _print_missing(console, doc["features"], doc["thresholds"]["alpha"])
    _print_new_values(console, doc["features"])
    _print_vanished(console, doc["features"])
    _print_seasonality(console, doc.get("seasonality") or {})
    p = doc["prevalence"]
    cur = p["current"]
    if not cur.get("n"):  # no labelled prediction in the window: nothing to compare, not "not drifted"
        where = "its matured part" if p.get("over") == "matured part" else "the window"
        say(console, f"reference {prop(p['reference'])} · current — · [yellow]cannot judge[/yellow] (no labels in "
                     f"{where} yet: pass an earlier `--at`)", "prevalence: ")
    else:
        say(console, f"reference {prop(p['reference'])} · current {fmt_rate(cur)} · p adj "
                     f"{pvalue(p.get('p_adjusted'))} · "
                     + ("[bold red]drifted[/bold red]" if p["drifted"] else "not drifted"), "prevalence: ")
    if cur.get("indicative") and cur.get("value") is not None:
        console.print("[dim]* indicative: fewer than 30 cases behind the rate[/dim]")
    if p.get("note"):
        say(console, p["note"], "note: ")
    _render_multivariate(doc.get("multivariate"), console)
    th = doc["thresholds"]
    console.print(f"[dim]drifted = (PSI ≥ {th['psi_warning']} or JS ≥ {th['js']}, each above its no-drift noise floor) "
                  f"and a KS, χ² or missing-share p < {th['alpha']} after Benjamini–Hochberg; alert when PSI ≥ {th['psi_alert']}. "
                  f"PSI floors empty bins at {th['psi_eps']}.[/dim]")
    if doc["untracked"]:
        vals = doc.get("untracked_values") or [{"feature": n} for n in doc["untracked"]]
        say(console, shown(capped([untracked_item(v) for v in vals])), "[yellow]not in the reference (not "
            "compared):[/yellow] ")
    und = doc.get("undeclared")
    if und:
        console.print(f"[yellow]{undeclared_line(und)}[/yellow]")
    over = doc.get("over_limit")
    if over:
        console.print(f"[yellow]{over_limit_line(over)}[/yellow]")


SHOWN_OVER = 5
"""Over-limit feature names named in the text line (--json lists every recorded one)."""


def over_limit_line(over: dict[str, Any]) -> str:
    """'851 feature names over max_features (50) not monitored: f050 (400), f051 (400), … (340,400 occurrences);
    …' from drift_document's `over_limit` block (event text made inert)."""
    names = over["names"]
    if not names:
        return (f"{count(over['occurrences'])} occurrences of feature names over max_features "
                f"({count(over['max_features'])}) not monitored; {over['scope']}")
    n = f"{count(len(names))}" if over["names_complete"] else f"at least {count(len(names))}"
    listed = ", ".join(f"{shown(x['feature'])} ({count(x['count'])})" for x in names[:SHOWN_OVER])
    more = ", …" if len(names) > SHOWN_OVER else ""
    return (f"{n} feature name{'s' if len(names) != 1 else ''} over max_features ({count(over['max_features'])}) "
            f"not monitored: {listed}{more} ({count(over['occurrences'])} occurrences); {over['scope']}; "
            "declare the features that matter under `features:` or raise `max_features`")


def undeclared_line(und: dict[str, Any]) -> str:
    """'3 feature names seen but not declared (not monitored): a (1,204), b (17), c (2); add them under
    `features:` to monitor them' from drift_document's `undeclared` block (event text made inert)."""
    names = und["names"]
    listed = ", ".join(f"{shown(n['feature'])} ({count(n['count'])})" for n in names)
    n = f"{count(len(names))}" if und.get("names_complete", True) else f"at least {count(len(names))}"
    head = (f"{n} feature name{'s' if len(names) != 1 else ''} seen but not declared (not "
            f"monitored): {listed}" if names else
            f"{count(und['occurrences'])} occurrences of feature names not declared (not monitored)")
    return head + f"; {und['scope']}; add them under `features:` to monitor them"
