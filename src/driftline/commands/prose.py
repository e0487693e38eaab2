"""Running text (notes, captions, warnings, list lines) word-wrapped to the console width by rich.

A terminal breaks a line longer than itself wherever the edge falls, mid-word; rich wraps between words when it
knows the width. So no prose is printed with `soft_wrap=True`: `say` wraps it, and a line that opens with a lead
(`note: `, an indent, `  feature: `) keeps its continuation lines indented (a hanging indent), so a wrapped note
or list item still reads as one item.
"""

from __future__ import annotations

from rich._wrap import divide_line
from rich.console import Console
from rich.text import Text

MAX_HANG = 8
"""Continuation lines start under the body when the lead is short (`note: `), else this far in (a long lead such
as `  label balance exp1 vs ctl: ` would leave too narrow a column)."""


def hang_of(lead: Text, indent: int) -> int:
    """Where continuation lines start: under the body after a short lead, else `indent` + 4."""
    return lead.cell_len if lead.cell_len <= MAX_HANG else indent + 4


def say(console: Console, body: str, lead: str = "", indent: int = 0, style: str | None = None) -> None:
    """Print `body` (rich markup) wrapped between words at `console.width`. The first line starts with `indent`
    spaces and `lead` (markup); continuation lines are indented by `hang_of`."""
    head = Text(" " * indent) + Text.from_markup(lead)
    if not head.cell_len:
        console.print(body, style=style)
        return
    text = head + console.render_str(body)
    if style:
        text.stylize(style)
    width = console.width
    hang = hang_of(head, indent)
    cut = divide_line(text.plain, width, fold=True)
    first_end = cut[0] if cut else len(text.plain)
    lines = [text[:first_end]]
    rest = text[first_end:]
    rest = rest[len(rest.plain) - len(rest.plain.lstrip(" ")):]
    if rest.plain:
        lines += list(rest.wrap(console, max(width - hang, 10)))
    for n, line in enumerate(lines):
        line.rstrip()
        console.print(line if n == 0 else Text(" " * hang) + line, soft_wrap=True)
