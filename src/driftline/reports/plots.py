"""Plots of the weekly report (matplotlib Figure objects, no pyplot) as inline PNG data URIs: metric trends with
interval bands, the reliability diagram, drift bars with noise floors, score distributions and the threshold cost curve.

PNG rather than SVG: a raster image carries no markup, so text from events (feature names, category values)
drawn in a plot can never become HTML. Every function returns None when its section has nothing to draw.
"""

from __future__ import annotations

import base64
import io
import logging
from typing import Any

from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, PercentFormatter

from .. import numbers
from ..terminal import visible

log = logging.getLogger(__name__)
DPI = 100
BLUE, ORANGE, GREY, RED, GREEN = "#1f77b4", "#ff7f0e", "#7f7f7f", "#d62728", "#2ca02c"


def _data_uri(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight", metadata={"Software": None})
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _figure(nrows: int = 1, ncols: int = 1, **kw: Any) -> tuple[Figure, Any]:
    """A figure and its axes without pyplot (no global figure registry: safe in scheduler threads)."""
    fig = Figure(**{k: v for k, v in kw.items() if k == "figsize"})
    return fig, fig.subplots(nrows, ncols, **{k: v for k, v in kw.items() if k != "figsize"})


def _txt(value: Any, limit: int = 40) -> str:
    """Text from events made inert for matplotlib: `$` would start mathtext (and can fail to parse); control
    characters are shown as escapes (no font has a glyph for them). A name longer than `limit` ends in '…' (tryout:
    a cut one read as a whole name); the report's text gives it whole."""
    text = str(value)
    if len(text) > limit:
        text = text[:limit - 1] + "…"
    return visible(text).replace("$", r"\$")


TREND_METRICS = (("recall", "Recall"), ("fpr", "False positive rate"), ("precision", "Precision"))
"""The trend charts, one image each (stacked on a phone, side by side on a wide screen)."""


def trends_plot(doc: dict[str, Any], key: str) -> str | None:
    """One metric's trend chart as a PNG data URI (None without labelled predictions)."""
    fig = trends_figure(doc, key)
    return None if fig is None else _data_uri(fig)


def trends_figure(doc: dict[str, Any], key: str) -> Figure | None:
    """One metric (recall, fpr or precision) per day with its 95 % Wilson band, targets and trigger lines, and a
    legend below the axes naming every line (each trigger line with its metric and value). Sized to be read at
    a phone's width: ~400 px wide, 9-point text, one chart per image."""
    days = doc["trends"]["days"]
    if not days or all(d["recall"]["value"] is None and d["fpr"]["value"] is None for d in days):
        return None
    title = dict(TREND_METRICS)[key]
    lines: list[tuple[float, str]] = []
    for t in doc["headline"]["triggers"]:
        if t["metric"] == key:
            lines.append((t["value"], f"trigger {_txt(t['name'])} ({t['metric']} {t['op']} {numbers.line(t['value'])})"))
    target = doc.get("targets", {}).get(key)
    if target is not None:
        lines.append((target, f"target {key} {target:g}"))
    fig, ax = _figure(figsize=(4.2, 3.3 + 0.2 * max(0, len(lines) - 1)))  # the same size side by side
    x = list(range(len(days)))
    vals = [d[key]["value"] for d in days]
    lo = [d[key]["low"] if d[key]["low"] is not None else float("nan") for d in days]
    hi = [d[key]["high"] if d[key]["high"] is not None else float("nan") for d in days]
    ax.fill_between(x, lo, hi, color=BLUE, alpha=0.2, label="95 % Wilson interval")
    ax.plot(x, [float("nan") if v is None else v for v in vals], marker="o", color=BLUE, label="daily value")
    for i, (value, name) in enumerate(lines):
        ax.axhline(value, color=RED if i == 0 else ORANGE, linestyle="--" if i == 0 else "-.", linewidth=1,
                   label=name)
    ax.set_title(title, fontsize=10)
    ax.set_xticks(x, [d["date"][5:] for d in days], rotation=45, fontsize=9)
    ax.tick_params(axis="y", labelsize=9)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.28), ncol=1, fontsize=8, frameon=False)
    fig.tight_layout()
    return fig


def reliability_plot(doc: dict[str, Any]) -> str | None:
    """Observed positive share against mean score per equal-width bin, with Wilson bars and the diagonal."""
    cal = doc["calibration"]
    if not cal.get("available"):
        return None
    rel = cal["document"]["calibration"]["reliability"]["width"]
    bins = [b for b in rel["bins"] if b["n"] and b["mean_score"] is not None]
    if not bins:
        return None
    fig, ax = _figure(figsize=(4.6, 4.2))
    ax.plot([0, 1], [0, 1], color=GREY, linestyle=":", label="perfect calibration")
    xs = [b["mean_score"] for b in bins]
    ys = [b["observed"]["value"] for b in bins]
    err = [[max(0.0, y - b["observed"]["low"]) for y, b in zip(ys, bins)],
           [max(0.0, b["observed"]["high"] - y) for y, b in zip(ys, bins)]]
    ax.errorbar(xs, ys, yerr=err, fmt="o-", color=BLUE, capsize=3, label="observed (95 % Wilson)")
    floor = cal["document"]["calibration"]["noise_floor"]["width"]
    ece = rel["ece"]
    title = "Reliability" if ece is None else f"Reliability: ECE {numbers.stat(ece)}"
    if floor.get("p95") is not None:
        title += f" (noise floor p95 {numbers.stat(floor['p95'])})"
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("mean predicted score")
    ax.set_ylabel("observed positive share")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    return _data_uri(fig)


def drift_plot(doc: dict[str, Any]) -> str | None:
    """PSI per feature (ranked) with its noise floor and the 0.1 / 0.25 lines, coloured by severity."""
    d = doc["drift"]
    if not d.get("available"):
        return None
    feats = [f for f in d["document"]["features"] if f.get("psi") is not None]
    if not feats:
        return None
    feats = feats[:20][::-1]
    colours = {"alert": RED, "warning": ORANGE, "none": BLUE}
    fig, ax = _figure(figsize=(7, 0.35 * len(feats) + 1.2))
    y = list(range(len(feats)))
    ax.barh(y, [f["psi"] for f in feats], color=[colours.get(f["severity"], BLUE) for f in feats])
    floors = [(f.get("noise_floor") or {}).get("psi") for f in feats]
    ax.scatter([v for v in floors if v is not None], [i for i, v in zip(y, floors) if v is not None], marker="|",
               s=200, color="black", label="noise floor (p95)", zorder=3)
    th = d["document"].get("thresholds", {})
    for value, name in ((th.get("psi_warning", 0.1), "warning"), (th.get("psi_alert", 0.25), "alert")):
        ax.axvline(value, color=GREY, linestyle="--", linewidth=1)
        ax.text(value, len(feats) - 0.4, f" {name}", fontsize=7, color=GREY)
    ax.set_yticks(y, [_txt(f["feature"]) for f in feats], fontsize=8)
    ax.set_xlabel("PSI vs reference")
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return _data_uri(fig)


def score_plot(doc: dict[str, Any]) -> str | None:
    """The score distribution figure as a PNG data URI (None without predictions this week)."""
    fig = score_figure(doc)
    return None if fig is None else _data_uri(fig)


def score_figure(doc: dict[str, Any]) -> Figure | None:
    """Share of predictions per equal-width score bin (0.0–0.1 … 0.9–1.0): the reference period next to this
    week (this week alone without a reference); the same bins as the table below the plot. The y axis names the
    predictions in the config's `domain:` word (tryout: "share of predictions" in a report on transactions)."""
    sd = doc["score_distribution"]
    bins = sd["bins"]
    if not sd["current_n"]:
        return None
    has_ref = bool(sd.get("reference")) and bool(sd["reference"]["n"])
    fig, ax = _figure(figsize=(7.0, 3.4))
    x = [b["low"] + 0.05 for b in bins]
    width = 0.04 if has_ref else 0.08
    if has_ref:
        ax.bar([v - 0.021 for v in x], [b["reference_share"] or 0.0 for b in bins], width=width, color=GREY,
               label=f"reference ({sd['reference']['n']:,})")
    ax.bar([v + (0.021 if has_ref else 0.0) for v in x], [b["current_share"] or 0.0 for b in bins], width=width,
           color=BLUE, label=f"this week ({sd['current_n']:,})")
    ax.set_xticks([round(i / 10, 1) for i in range(11)], [f"{i / 10:.2f}" for i in range(11)], fontsize=8)
    ax.set_xlim(0, 1)
    ax.set_xlabel("score")
    ax.set_ylabel(f"share of {_txt(doc.get('domain', {}).get('predictions') or 'predictions')}")
    ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    rvc = sd.get("reference_vs_current")
    psi = rvc.get("psi") if rvc else None
    title = "Score distribution" + ("" if has_ref else " (no reference)")
    ax.set_title(title + ("" if psi is None else f" (PSI {numbers.stat(psi)})"), fontsize=9)
    ax.legend(fontsize=7, loc="best")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def threshold_plot(doc: dict[str, Any]) -> str | None:
    """The threshold figure as a PNG data URI (None without priced rows)."""
    fig = threshold_figure(doc)
    return None if fig is None else _data_uri(fig)


def threshold_figure(doc: dict[str, Any]) -> Figure | None:
    """Monthly total cost, missed-positive cost and review hours against the threshold; the deployed and
    cheapest thresholds marked; the legend below the axes so it never hides a curve."""
    t = doc["thresholds"]
    rows = [r for r in t.get("rows", []) if r.get("monthly")]
    if not rows:
        return None
    words = doc.get("domain") or {}
    hours = words.get("review_hours", "review hours")
    xs = [r["threshold"] for r in rows]
    fig, ax = _figure(figsize=(6.5, 4.4))
    ax.plot(xs, [r["monthly"]["total"] for r in rows], marker="o", color=BLUE, label="total cost / month",
            zorder=3)
    ax.plot(xs, [r["monthly"]["missed_cost"] for r in rows], marker=".", color=RED, linestyle="--",
            label=f"{_txt(words.get('missed_cost', 'cost of missed positives'))} / month")
    ax.set_xlabel("threshold")
    ax.set_ylabel(f"{_txt(t.get('currency') or '')} per month")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: numbers.count(v)))
    ax2 = ax.twinx()
    ax2.plot(xs, [r["monthly"]["review_hours"] for r in rows], marker="s", color=GREEN, alpha=0.7,
             label=f"{_txt(hours)} / month")
    ax2.set_ylabel(f"{_txt(hours)} per month")
    ax2.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: numbers.count(v)))
    ax.axvline(t["deployed"], color=GREY, linestyle=":", label=f"deployed threshold {t['deployed']:g}")
    if t.get("cheapest"):
        c = t["cheapest"]
        ax.scatter([c["threshold"]], [c["total"]], s=120, facecolors="none", edgecolors="black", zorder=4,
                   label=f"cheapest {c['threshold']:g} (in-sample)")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2,
              frameon=False)
    ax.grid(alpha=0.3)
    ax.set_title("Threshold trade-off at the monthly volume", fontsize=9)
    fig.tight_layout()
    return fig


def all_plots(doc: dict[str, Any]) -> dict[str, str | None]:
    """Every plot of the report by name (None where the section has nothing to draw, or when drawing failed:
    a plot is never worth losing the report for; the failure is logged)."""
    out: dict[str, str | None] = {}
    draw = [(f"trend_{key}", lambda d, k=key: trends_plot(d, k)) for key, _ in TREND_METRICS]
    for name, fn in (*draw, ("reliability", reliability_plot), ("drift", drift_plot),
                     ("scores", score_plot), ("thresholds", threshold_plot)):
        try:
            out[name] = fn(doc)
        except Exception:  # noqa: BLE001 - see docstring
            log.exception("report plot %s failed", name)
            out[name] = None
    return out
