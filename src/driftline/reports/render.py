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
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from ..terminal import visible

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
_SYMBOLS = {"EUR": "€", "USD": "$", "GBP": "£", "JPY": "¥", "CHF": "CHF "}


class Formatted(str):
    """A string produced by a number formatter: safe as it is in Markdown (no event text inside)."""


def num(v: float | None, digits: int = 3) -> Formatted:
    """'0.812', or '—' for a missing value."""
    return Formatted("—" if v is None else f"{v:.{digits}f}")


def count(v: float | None) -> Formatted:
    """Thousands-separated whole number ('6,533'), '—' when missing."""
    return Formatted("—" if v is None else f"{v:,.0f}")


def pct(v: float | None, digits: int = 1) -> Formatted:
    """'81.2 %', '—' when missing."""
    return Formatted("—" if v is None else f"{100 * v:.{digits}f} %")


def money(v: float | None, currency: str = "EUR") -> Formatted:
    """'€200,867' (negative: '−€1,234'), '—' when missing."""
    if v is None:
        return Formatted("—")
    sym = _SYMBOLS.get(currency, currency + " ")
    return Formatted(("−" if v < -0.5 else "") + f"{sym}{abs(v):,.0f}")


def rate(r: dict[str, Any] | None, digits: int = 3) -> Formatted:
    """'0.800 [0.490, 0.943] n=10*' (* = indicative, n < 30); '— (n=0)' without data."""
    if not r or r.get("value") is None:
        return Formatted(f"— (n={r.get('n', 0) if r else 0})")
    star = "*" if r.get("indicative") else ""
    if r.get("low") is None:
        return Formatted(f"{r['value']:.{digits}f}")
    return Formatted(f"{r['value']:.{digits}f} [{r['low']:.{digits}f}, {r['high']:.{digits}f}] n={r['n']:,}{star}")


def interval(low: float | None, high: float | None, digits: int = 3) -> Formatted:
    """'[0.490, 0.943]', '—' when missing."""
    return Formatted("—" if low is None or high is None else f"[{low:.{digits}f}, {high:.{digits}f}]")


def signed(v: float | None, digits: int = 3) -> Formatted:
    """'+0.056' / '-0.018', '—' when missing."""
    return Formatted("—" if v is None else f"{v:+.{digits}f}")


def pvalue(p: float | None) -> Formatted:
    """'0.0123', '<0.0001', '—'."""
    return Formatted("—" if p is None else ("<0.0001" if p < 1e-4 else f"{p:.4f}"))


def duration(seconds: float | None) -> Formatted:
    """'1.5 d' / '3.2 h' / '12 min', '—' when missing."""
    if seconds is None:
        return Formatted("—")
    if seconds >= 86400:
        return Formatted(f"{seconds / 86400:.1f} d")
    if seconds >= 3600:
        return Formatted(f"{seconds / 3600:.1f} h")
    return Formatted(f"{seconds / 60:.0f} min")


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
    env.filters.update(num=num, count=count, pct=pct, money=money, rate=rate, interval=interval, signed=signed,
                       pvalue=pvalue, duration=duration)
    return env


_HTML_ENV = _env(markdown=False)
_MD_ENV = _env(markdown=True)


def render_html(doc: dict[str, Any], plots: dict[str, str | None]) -> str:
    """Self-contained HTML page of the report (inline CSS, plots as PNG data URIs, no script)."""
    return _HTML_ENV.get_template("report.html.j2").render(doc=doc, plots=plots)


def render_markdown(doc: dict[str, Any]) -> str:
    """Markdown version of the report (tables; the plots are in the HTML version)."""
    return _MD_ENV.get_template("report.md.j2").render(doc=doc)


def render_json(doc: dict[str, Any]) -> str:
    """The report document as JSON (no NaN: missing values are null)."""
    return json.dumps(doc, allow_nan=False, indent=1)
