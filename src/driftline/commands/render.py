"""Terminal rendering with rich: readable tables for people, JSON for programs."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape

from .. import numbers
from ..terminal import quoted_name, shell_word, visible
from .prose import say
from .tables import Col, print_table


DISPLAY = {"fpr": "FPR", "alert_rate": "alert rate"}
"""Metric keys (as in --json and `metric:` of triggers) as tables name them, the same in every command."""


def shown(text: object) -> str:
    """Event-derived text for a rich console: control characters escaped visibly, rich markup shown as written."""
    return escape(visible(text))


def shown_word(text: str) -> str:
    """`shell_word(text)` for a rich console: a name in a suggested command, pasted as one shell word."""
    return escape(shell_word(text))


def shown_name(text: str) -> str:
    """`quoted_name(text)` for a rich console: a suggested name, quoted so that it pastes as one shell word."""
    return escape(quoted_name(text))


def fmt_rate(r: dict[str, Any]) -> str:
    """'0.800 [0.490, 0.943] n=10*' — * marks an indicative rate (n < 30); '— (n=0)' when n = 0 (numbers.rate)."""
    return numbers.rate(r)


INDICATIVE_NOTE = "[dim]* indicative: fewer than 30 cases behind the rate[/dim]"


def footnote_if(console: Console, used: bool, text: str = INDICATIVE_NOTE) -> None:
    """Print a footnote only when a row used its mark."""
    if used:
        console.print(text)


NOTHING_STORED = "no predictions stored yet"
"""The `note` of a document read from a database holding no prediction of its model (window bounds null)."""


def nothing_stored(doc: dict[str, Any], console: Console) -> bool:
    """Print 'fraud: no predictions stored yet (feed events with …)' and say True when the document's window has
    no bounds (nothing stored): the same line for every query command, never a window at 1970."""
    if doc["window"]["start"] is not None:
        return False
    console.print(f"{shown(doc.get('model') or 'all models')}: {NOTHING_STORED} "
                  "(feed events with `driftline replay`, `driftline run`, or try `driftline demo`)")
    return True


def mark_nothing_stored(doc: dict[str, Any]) -> dict[str, Any]:
    """A document read from a database without the model's predictions, as `metrics` gives it: null window bounds
    (not a window ending 1970-01-01) and the note saying why, before any note of its own."""
    doc["window"].update(start=None, end=None)
    doc["note"] = NOTHING_STORED + (f"; {doc['note']}" if doc.get("note") else "")
    return doc


def metrics_table(doc: dict[str, Any], console: Console) -> None:
    """Print a metrics document as two tables: rates with intervals, then scores and counts."""
    w = doc["window"]
    if nothing_stored(doc, console):
        return
    title = f"{doc.get('model') or 'all models'} · {w['start']} → {w['end']} ({w['label']})"
    if doc.get("variant"):
        title += f" · variant {doc['variant']}"
    if doc.get("model_version"):
        title += f" · version {doc['model_version']}"
    if doc.get("scope"):  # shadow mode: the whole model is the production arm (readouts.headline)
        title += f" · {doc['scope']['text']}"
    c = {k: numbers.count(v) if isinstance(v, int) else v for k, v in doc["counts"].items()}
    raw = doc["counts"]
    m = doc["metrics"]
    explain = {
        "recall": f"tp={c['tp']} of positives={c['positives']}",
        "fpr": f"fp={c['fp']} of negatives={c['negatives']}",
        "precision": f"tp={c['tp']} of flagged labelled={numbers.count(raw['tp'] + raw['fp'])}",
        "specificity": f"tn={c['tn']} of negatives={c['negatives']}",
        "accuracy": f"tp+tn={numbers.count(raw['tp'] + raw['tn'])} of labelled={c['labelled']}",
        "prevalence": f"positives={c['positives']} of labelled={c['labelled']}",
        "alert_rate": f"flagged={c['flagged']} of predictions={c['predictions']}",
    }
    keys = ("recall", "fpr", "precision", "specificity", "accuracy", "prevalence", "alert_rate")
    rows = [[DISPLAY.get(key, key), fmt_rate(m[key]), explain[key]] for key in keys]
    rows.append(["label coverage", fmt_rate(doc["label_coverage"]),
                 f"labelled={c['labelled']} of predictions={c['predictions']}"])
    print_table(console, [Col("metric", "left"), Col("value [95 % Wilson] n"), Col("counts", drop=1)], rows,
                title=shown(title))
    from ..analysis.flag_thresholds import flag_note  # numpy: not at import time (tests/test_cli_imports)
    flags = flag_note(doc.get("threshold_in_force"))
    if flags:
        say(console, shown(flags), "[yellow]note:[/yellow] ")
    if doc.get("label_maturity"):
        say(console, shown(doc['label_maturity']['note']), "[yellow]note:[/yellow] ")
    if doc.get("note"):
        say(console, shown(doc["note"]), "[yellow]note:[/yellow] ")
    d = doc["label_delay_seconds"]
    auc_txt, ap_txt = (numbers.prop(m[k]["value"]) + ("" if m[k].get("low") is None else
                                                       " " + numbers.interval(m[k]["low"], m[k]["high"]))
                       for k in ("roc_auc", "average_precision"))
    cols = [Col("F1"), Col("ROC AUC [95 %]"), Col("avg precision [95 %]"), Col("Brier", drop=2), Col("log loss", drop=3),
            Col("ECE (10 bins)", drop=2), Col("delay p50", drop=1), Col("delay p95", drop=1)]
    print_table(console, cols, [[
        numbers.prop(m["f1"]["value"]), auc_txt, ap_txt,
        numbers.stat(m["brier"]["value"]), numbers.stat(m["log_loss"]["value"]), numbers.stat(m["ece"]["value"]),
        numbers.duration(d.get("p50")), numbers.duration(d.get("p95"))]],
        title="threshold-free scores and label delay")
    used = [m[k] for k in keys] + [doc["label_coverage"]]
    if len(doc.get("by_variant", [])) > 1:
        vcols = [Col("variant", "left"), Col("version", "left", drop=3), Col("predictions", drop=1), Col("recall"),
                 Col("FPR"), Col("precision", drop=2), Col("alert rate", drop=4)]
        vrows = []
        for g in doc["by_variant"]:
            gm = g["metrics"]
            used += [gm["recall"], gm["fpr"], gm["precision"], gm["alert_rate"]]
            vrows.append([shown(g["variant"]), shown(g["model_version"]), numbers.count(g["counts"]["predictions"]),
                          fmt_rate(gm["recall"]), fmt_rate(gm["fpr"]), fmt_rate(gm["precision"]),
                          fmt_rate(gm["alert_rate"])])
        print_table(console, vcols, vrows, title="by variant")
    over = {k: n for k, n in doc.get("label_overflow", {}).items() if n}
    if over:
        console.print("label limits: " + ", ".join(f"{numbers.counted(n, 'event')} with a new {k} folded into __other__"
                                                     for k, n in over.items()) + " (all time; see `limits:`)")
    footnote_if(console, numbers.indicative_used(used))
