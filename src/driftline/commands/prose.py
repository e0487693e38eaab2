"""Running text (notes, captions, warnings, list lines) word-wrapped to the console width by rich.

A terminal breaks a line longer than itself wherever the edge falls, mid-word; rich wraps between words when it
knows the width. So no prose is printed with `soft_wrap=True`: `say` wraps it, and a line that opens with a lead
(`note: `, an indent, `  feature: `) keeps its continuation lines indented (a hanging indent), so a wrapped note
or list item still reads as one item. A command between backticks is never broken (verification tryout: at 80
columns "run `driftline models forget '…' ⏎--yes`" pasted as shown ran the first line, without --yes): its
spaces do not count as places to wrap, and a command wider than the console stays on one line of text, which the
terminal wraps visually with no newline inside it.
"""

from __future__ import annotations

import re

from rich._wrap import divide_line
from rich.console import Console
from rich.text import Text

MAX_HANG = 8
"""Continuation lines start under the body when the lead is short (`note: `), else this far in (a long lead such
as `  label balance exp1 vs ctl: ` would leave too narrow a column)."""


_CODE = re.compile(r"`[^`\n]+`")
"""A backtick-quoted command or name in prose: wrapped as one word."""


def _keep_together(text: Text) -> tuple[Text, str]:
    """`text` with each space inside a backtick span replaced by a one-cell non-space character absent from it
    (so the wrapper sees one word), and that character ('' when there is no such span)."""
    plain = text.plain
    spans = [m.span() for m in _CODE.finditer(plain) if " " in m.group()]
    if not spans:
        return text, ""
    glue = next(chr(c) for c in range(0xE000, 0xF900) if chr(c) not in plain)  # private use: one cell
    chars = list(plain)
    for start, end in spans:
        chars[start:end] = plain[start:end].replace(" ", glue)
    return Text("".join(chars), style=text.style, spans=list(text.spans), end=text.end), glue


def _unglue(line: Text, glue: str) -> Text:
    """`line` with the spaces `_keep_together` replaced put back."""
    if not glue or glue not in line.plain:
        return line
    return Text(line.plain.replace(glue, " "), style=line.style, spans=list(line.spans), end=line.end)


def _wrap_unfolded(text: Text, width: int) -> list[Text]:
    """`text` wrapped between words at `width` like `Text.wrap`, except that a word wider than `width` (a glued
    command) is left whole on a line of its own rather than folded or cut."""
    lines: list[Text] = []
    for line in text.split(allow_blank=True):
        lines += line.divide(divide_line(line.plain, width, fold=False))
    return lines


def hang_of(lead: Text, indent: int) -> int:
    """Where continuation lines start: under the body after a short lead, else `indent` + 4."""
    return lead.cell_len if lead.cell_len <= MAX_HANG else indent + 4


def say(console: Console, body: str, lead: str = "", indent: int = 0, style: str | None = None) -> None:
    """Print `body` (rich markup) wrapped between words at `console.width`. The first line starts with `indent`
    spaces and `lead` (markup); continuation lines are indented by `hang_of`."""
    head = Text(" " * indent) + Text.from_markup(lead)
    if not head.cell_len and not any(" " in m.group() for m in _CODE.finditer(body)):
        console.print(body, style=style)
        return
    text, glue = _keep_together(head + console.render_str(body))
    if style:
        text.stylize(style)
    width = console.width
    hang = hang_of(head, indent)
    cut = divide_line(text.plain, width, fold=not glue)  # a command wider than the console is not cut
    first_end = cut[0] if cut else len(text.plain)
    lines = [text[:first_end]]
    rest = text[first_end:]
    rest = rest[len(rest.plain) - len(rest.plain.lstrip(" ")):]
    if rest.plain:
        column = max(width - hang, 10)
        lines += _wrap_unfolded(rest, column) if glue else list(rest.wrap(console, column))
    for n, line in enumerate(lines):
        line.rstrip()
        line = _unglue(line, glue)
        console.print(line if n == 0 else Text(" " * hang) + line, soft_wrap=True)
