"""Terminal rendering with rich: readable tables for people, JSON for programs."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..terminal import visible


def shown(text: object) -> str:
    """Event-derived text for a rich console: control characters escaped visibly, rich markup shown as written."""
    return escape(visible(text))


def fmt_rate(r: dict[str, Any], digits: int = 3) -> str:
    """'0.800 [0.490, 0.943] n=10*' — * marks an indicative rate (n < 30); '—' when n = 0."""
    if r.get("value") is None:
        return "— (n=0)"
    star = "*" if r.get("indicative") else ""
    return f"{r['value']:.{digits}f} [{r['low']:.{digits}f}, {r['high']:.{digits}f}] n={r['n']}{star}"


def fmt_num(v: float | None, digits: int = 4) -> str:
    return "—" if v is None else f"{v:.{digits}f}"


def metrics_table(doc: dict[str, Any], console: Console) -> None:
    """Print a metrics document as two tables: rates with intervals, then scores and counts."""
    w = doc["window"]
    if w["start"] is None:
        console.print(f"{shown(doc.get('model') or 'all models')}: no predictions stored yet "
                      "(feed events with `driftline replay`, `driftline run`, or try `driftline demo`)")
        return
    title = f"{doc.get('model') or 'all models'} · {w['start']} → {w['end']} ({w['label']})"
    if doc.get("variant"):
        title += f" · variant {doc['variant']}"
    c = doc["counts"]
    t = Table(title=shown(title), title_justify="left")
    t.add_column("metric")
    t.add_column("value [95 % Wilson]", justify="right")
    t.add_column("counts", justify="right")
    m = doc["metrics"]
    explain = {
        "recall": f"tp={c['tp']} of positives={c['positives']}",
        "fpr": f"fp={c['fp']} of negatives={c['negatives']}",
        "precision": f"tp={c['tp']} of flagged labelled={c['tp'] + c['fp']}",
        "specificity": f"tn={c['tn']} of negatives={c['negatives']}",
        "accuracy": f"tp+tn={c['tp'] + c['tn']} of labelled={c['labelled']}",
        "prevalence": f"positives={c['positives']} of labelled={c['labelled']}",
        "alert_rate": f"flagged={c['flagged']} of predictions={c['predictions']}",
    }
    for key in ("recall", "fpr", "precision", "specificity", "accuracy", "prevalence", "alert_rate"):
        t.add_row(key, fmt_rate(m[key]), explain[key])
    t.add_row("label coverage", fmt_rate(doc["label_coverage"]),
              f"labelled={c['labelled']} of predictions={c['predictions']}")
    console.print(t)
    if doc.get("label_maturity"):
        console.print(f"[yellow]note:[/yellow] {shown(doc['label_maturity']['note'])}", soft_wrap=True)
    s = Table(show_header=True, title="threshold-free scores and label delay", title_justify="left")
    for col in ("F1", "ROC AUC", "avg precision", "Brier", "log loss", "ECE (10 bins)", "delay p50", "delay p95"):
        s.add_column(col, justify="right")
    d = doc["label_delay_seconds"]
    s.add_row(fmt_num(m["f1"]["value"]), fmt_num(m["roc_auc"]["value"]), fmt_num(m["average_precision"]["value"]),
              fmt_num(m["brier"]["value"]), fmt_num(m["log_loss"]["value"]), fmt_num(m["ece"]["value"]),
              _dur(d.get("p50")), _dur(d.get("p95")))
    console.print(s)
    if len(doc.get("by_variant", [])) > 1:
        v = Table(title="by variant", title_justify="left")
        for col in ("variant", "version", "predictions", "recall", "fpr", "precision", "alert rate"):
            v.add_column(col, justify="right")
        for g in doc["by_variant"]:
            gm = g["metrics"]
            v.add_row(shown(g["variant"]), shown(g["model_version"]), str(g["counts"]["predictions"]),
                      fmt_rate(gm["recall"]), fmt_rate(gm["fpr"]), fmt_rate(gm["precision"]), fmt_rate(gm["alert_rate"]))
        console.print(v)
    over = {k: n for k, n in doc.get("label_overflow", {}).items() if n}
    if over:
        console.print("label limits: " + ", ".join(f"{n} events with a new {k} folded into __other__"
                                                     for k, n in over.items()) + " (all time; see `limits:`)")
    console.print("[dim]* indicative: fewer than 30 cases behind the rate[/dim]")


def _dur(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds >= 86400:
        return f"{seconds / 86400:.1f} d"
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.0f} min"
