"""Render a report document as self-contained HTML (inline CSS and PNG plots, no external request), Markdown
and JSON, with the jinja2 templates in driftline/templates.

HTML is autoescaped, so text from events (feature names, category values, variant names) is shown, never run;
control characters in it are shown as escapes (`\\x1b`) in both HTML and Markdown.
In Markdown every value is escaped (`| < > & * _ [ ] \\` and backquotes, newlines folded) unless it comes from
one of the number formatters below.
"""

from __future__ import annotations

import json
import re
from datetime import date
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from .. import numbers
from ..metric_names import line_text
from ..triggers.metrics import shown_value
from ..analysis.calibrated import reason_text
from ..domain import capitalised
from ..terminal import visible
from .summary import METRIC_NAMES, by_importance, cost_minimum_sentence, cost_optimal_sentence, kpi_sentence
from .wrapping import ident, idents

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"


class Formatted(str):
    """A string produced by a number formatter: safe as it is in Markdown (no event text inside)."""


# Every filter below formats through numbers.py: the report reads like the terminal (README, "Reading the output").
def num(v: float | None, digits: int = numbers.PLACES) -> Formatted:
    """'0.812' (a proportion, 3 places) or a statistic with `digits` places ('0.0123'), '—' when missing."""
    return Formatted(numbers.MISSING if v is None else numbers.fixed(v, digits))


def trigger_value(v: float | None, metric: str) -> Formatted:
    """A trigger's value as `driftline alerts` shows it: '0.588', '12.5 d', '2', '0.2304'."""
    return Formatted(shown_value(metric, v))


def trigger_line(t: dict[str, Any]) -> Formatted:
    """A trigger's line as `driftline alerts` shows it: '0.70', '14 d', '0' (a count of drifted features)."""
    return Formatted(line_text(t["metric"], t["value"]))


def stat(v: float | None, signed: bool = False) -> Formatted:
    """An error or divergence statistic (ECE, Brier, log loss, PSI, JS): '0.0123'."""
    return Formatted(numbers.stat(v, signed=signed))


def count(v: float | None, signed: bool = False) -> Formatted:
    """Thousands-separated whole number ('6,533', '−180'; `signed`: '+1,200' for a difference), '—' when missing."""
    return Formatted(numbers.count(v, signed=signed))


def ratio(k: float | None, n: float | None) -> Formatted:
    """'487/3,754'."""
    return Formatted(numbers.ratio(k, n))


def pct(v: float | None, digits: int = 1) -> Formatted:
    """'81.2 %', '—' when missing."""
    return Formatted(numbers.percent(v, digits))


def money(v: float | None, currency: str | None, low: float | None = None, high: float | None = None,
          signed: bool = False) -> Formatted:
    """'€200,867', '−€1,234', '€5,909 [€4,372, €7,447]' in the configured currency, '—' when missing."""
    return Formatted(numbers.money(v, low, high, signed=signed, currency=currency))


def money_interval(low: float | None, high: float | None, currency: str | None,
                   value: float | None = None) -> Formatted:
    """'[−€4,110, −€158]': the interval of an amount, with the decimals of the amount it belongs to."""
    return Formatted(numbers.money_interval(low, high, currency, value))


def estimate(e: dict[str, Any] | None) -> Formatted:
    """'~0.712 [0.650, 0.770]': a label-free estimate."""
    return Formatted(numbers.MISSING if not e else numbers.estimate(e))


def rate(r: dict[str, Any] | None) -> Formatted:
    """'0.800 [0.490, 0.943] n=10*' (* = indicative, n < 30); '— (n=0)' without data."""
    if not r or r.get("value") is None:
        return Formatted(f"{numbers.MISSING} (n={numbers.count((r or {}).get('n') or 0)})")
    if r.get("low") is None:
        return Formatted(numbers.prop(r["value"]))
    return Formatted(numbers.rate(r))


STAT_METRICS = frozenset({"ece", "brier", "log_loss"})
"""Headline metrics that are error statistics (4 places), not proportions."""


def headline_value(r: dict[str, Any], with_interval: bool = True) -> Formatted:
    """A headline row's value: a statistic as '0.1483', a proportion as '0.456 [0.415, 0.498] n=550' (with
    `with_interval`, else '0.456\\*' with the indicative mark escaped for the Markdown table)."""
    if r.get("metric") in STAT_METRICS:
        return stat(r.get("value"))
    if with_interval:
        return rate(r)
    star = "\\*" if r.get("indicative") and r.get("value") is not None else ""
    return Formatted(numbers.prop(r.get("value")) + star)


def interval(low: float | None, high: float | None, digits: int = numbers.PLACES) -> Formatted:
    """'[0.490, 0.943]', '[−0.018, 0.130]', '—' when missing."""
    return Formatted(numbers.interval(low, high, digits))


def signed(v: float | None, digits: int = numbers.PLACES) -> Formatted:
    """'+0.056' / '−0.018', '—' when missing."""
    return Formatted(numbers.MISSING if v is None else numbers.fixed(v, digits, signed=True))


def pvalue(p: float | None) -> Formatted:
    """'0.087', '<0.0001', '—' (2 significant digits, as in the terminal)."""
    return Formatted(numbers.pvalue(p))


def duration(seconds: float | None) -> Formatted:
    """'1.5 d' / '3.2 h' / '12 min', '—' when missing."""
    return Formatted(numbers.duration(seconds))


def when(ts: str | None) -> str:
    """'2026-11-23T00:00:00Z' → '2026-11-23 00:00 UTC' (to the minute: the report's times are UTC), '—' when
    missing; text that is not an ISO timestamp passes unchanged."""
    if not ts:
        return "—"
    m = re.match(r"^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2})", str(ts))
    return f"{m.group(1)} {m.group(2)} UTC" if m else str(ts)


def day_when(ts: str | None) -> str:
    """'2026-12-05T11:00:00Z' → 'Saturday 2026-12-05 11:00 UTC': the weekday read from the date itself, since a
    partial week's window ends on whatever day it is cut (a tryout read "to Monday 2026-12-05", a Saturday)."""
    m = re.match(r"^(\d{4}-\d{2}-\d{2})[T ]", str(ts or ""))
    return f"{date.fromisoformat(m.group(1)).strftime('%A')} {when(ts)}" if m else when(ts)


def week_words(label: str) -> str:
    """'2026-W48' → 'week 48 of 2026' (ISO week numbering: weeks start on Monday)."""
    m = re.match(r"^(\d{4})-W(\d{2})$", label)
    return f"week {int(m.group(2))} of {m.group(1)}" if m else label


def metric_name(key: str) -> str:
    """A metric's name in sentences and tables ('fpr' → 'False positive rate')."""
    return METRIC_NAMES.get(key, key)


def versus_baseline(b: dict[str, Any], words: dict[str, str], currency: str | None) -> str:
    """The KPI sentence of the business section (see summary.kpi_sentence), money in the report's currency."""
    return kpi_sentence(b["versus_baseline"], b["baseline"]["name"], words, lambda v: money(v, currency))


def cost_optimal(doc: dict[str, Any]) -> Formatted:
    """The cost-optimal threshold line (summary.cost_optimal_sentence) in the report's currency; no event text."""
    t, cur = doc["thresholds"], doc.get("currency")
    return Formatted(cost_optimal_sentence(t, doc["thresholds"]["deployed"], doc["domain"]["review_hours"],
                                           lambda v: money(v, cur)))


def cost_minimum(doc: dict[str, Any]) -> Formatted:
    """The cheapest-threshold line (summary.cost_minimum_sentence) in the report's currency; no event text."""
    return Formatted(cost_minimum_sentence(doc["thresholds"], lambda v: money(v, doc.get("currency"))))


_SCROLL_OPEN, _SCROLL_CLOSE = '<div class="scroll"><table', "</table></div>"


def scrollable_tables(html: str) -> str:
    """Wrap every table in a horizontally scrolling block so a wide table never widens a phone's page (the
    templates are autoescaped: text from events cannot contain a `<table` tag)."""
    return html.replace("<table", _SCROLL_OPEN).replace("</table>", _SCROLL_CLOSE)


_MD = re.compile(r"([\\`*_\[\]|<>&#])")


def md_escape(value: Any) -> str:
    """Markdown-inert text: special characters backslash-escaped (& < > as entities), newlines folded."""
    if value is None:
        return ""
    if isinstance(value, Formatted):
        return str(value)
    text = visible(" ".join(str(value).splitlines()))  # control characters escaped too: `cat report.md` is safe
    return _MD.sub(lambda m: {"<": "&lt;", ">": "&gt;", "&": "&amp;"}.get(m.group(1), "\\" + m.group(1)), text)


def html_text(value: Any) -> Any:
    """Text for the HTML page with its control characters escaped visibly (autoescape then handles < > &);
    markup the templates mark safe and numbers pass as they are."""
    return visible(value) if isinstance(value, str) and not isinstance(value, Markup) else value


def _env(markdown: bool) -> Environment:
    if markdown:
        env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=False, finalize=md_escape,
                          undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    else:
        env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=True, finalize=html_text,
                          undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
        env.filters.update(ident=ident, idents=idents)  # <wbr> after `_ . -` in identifiers (wrapping.py)
    env.filters.update(headline_value=headline_value, num=num, stat=stat, ratio=ratio, money_interval=money_interval,
                       estimate=estimate, count=count, pct=pct, money=money, rate=rate, interval=interval,
                       signed=signed, pvalue=pvalue, duration=duration, when=when, day_when=day_when,
                       week_words=week_words,
                       metric_name=metric_name, capitalised=capitalised, by_importance=by_importance,
                       reason_text=reason_text, line=numbers.line,
                       trigger_value=trigger_value, trigger_line=trigger_line)
    env.globals.update(versus_baseline=versus_baseline, cost_optimal=cost_optimal, cost_minimum=cost_minimum)
    return env


_HTML_ENV = _env(markdown=False)
_MD_ENV = _env(markdown=True)


def render_html(doc: dict[str, Any], plots: dict[str, str | None]) -> str:
    """Self-contained HTML page of the report (inline CSS, plots as PNG data URIs, no script)."""
    return scrollable_tables(_HTML_ENV.get_template("report.html.j2").render(doc=doc, plots=plots))


def render_markdown(doc: dict[str, Any]) -> str:
    """Markdown version of the report (tables; the plots are in the HTML version)."""
    return _MD_ENV.get_template("report.md.j2").render(doc=doc)


def render_json(doc: dict[str, Any]) -> str:
    """The report document as JSON (no NaN: missing values are null)."""
    return json.dumps(doc, allow_nan=False, indent=1)
