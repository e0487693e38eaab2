"""Line-break opportunities in identifiers for the HTML report: a trigger or feature name breaks after `_`, `.` or
`-`, not mid-word (user tryout: at 390 px 'recall_below_target_for_card_not_pre|sent_transactions').

Each filter returns markup: the text is escaped piece by piece (control characters shown as escapes first, as
`render.html_text` does) and `<wbr>` goes after each separator, so event text is still shown, never run.
"""

from __future__ import annotations

import re
from typing import Any

from markupsafe import Markup, escape

from ..terminal import visible

_AFTER_SEPARATOR = re.compile(r"(?<=[_.\-])(?=.)")
"""The position after each `_`, `.` or `-` that is not the last character."""
_TOKEN = re.compile(r"(\S+)")
_IDENTIFIER = re.compile(r"_|[A-Za-z]\w*\.\w*[A-Za-z]")
"""A token of prose that reads as an identifier: it holds `_` (`recall_below_target`) or a dotted name with letters
(`amount.v2`); numbers ('0.456', '2026-11-28') and plain words are left as they are."""
_CODE = re.compile(r"`([^`\n]+)`")
"""A name quoted as Markdown code: `labels.horizon`."""
WBR = Markup("<wbr>")


def ident(value: Any) -> Any:
    """An identifier (trigger, feature, variant, slice value) with `<wbr>` after each `_`, `.`, `-`; None, numbers
    and markup pass unchanged."""
    if not isinstance(value, str) or isinstance(value, Markup):
        return value
    return WBR.join(escape(part) for part in _AFTER_SEPARATOR.split(visible(value)))


def idents(value: Any) -> Any:
    """Prose in which identifiers may appear (the summary, notes, a target's source): the identifier-like tokens
    get `<wbr>` after their separators, a `quoted` name (Markdown code, as the terminal and the Markdown report
    show it) is set in <code> instead of showing its backticks (tryout: "(`labels.horizon`)" in the HTML), the
    rest is escaped as it is."""
    if not isinstance(value, str) or isinstance(value, Markup):
        return value
    pieces = _CODE.split(visible(value))  # odd indices are the quoted names
    return Markup("").join(_code(p) if i % 2 else _prose(p) for i, p in enumerate(pieces))


def _code(quoted: str) -> Markup:
    """A quoted name, breakable after its separators; a quoted command (it holds a space: `driftline report --week
    2026-W48`) is never broken (class `cmd`, white-space: nowrap in the template), as the README promises for
    suggested commands (on-call tryout: a phone showed 'driftline report -' then '-week 2026-W48')."""
    if " " in quoted:
        return Markup('<code class="cmd">%s</code>') % quoted
    return Markup("<code>%s</code>") % ident(quoted)


def _prose(text: str) -> Markup:
    """Unquoted prose: identifier-like tokens get `<wbr>`, the rest is escaped."""
    parts = _TOKEN.split(text)  # odd indices are the tokens
    return Markup("").join(ident(p) if i % 2 and _IDENTIFIER.search(p) else escape(p) for i, p in enumerate(parts))
