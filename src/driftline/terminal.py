"""Text from events made safe to show: control characters escaped visibly (read by every layer that prints).

Event data (model, variant and feature names, values, dead-letter payloads) reaches terminals, logs and reports.
An ESC or BEL in it could retitle the terminal, clear the screen or fake output, so every human-readable
renderer passes such text through `visible()`; JSON output keeps the exact text.
"""

from __future__ import annotations

import logging
import re
import shlex

_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
"""C0 and C1 controls and DEL, line/paragraph separators, and the bidirectional overrides ("Trojan source")."""


def _escape(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def visible(text: object) -> str:
    """`text` with every control character shown as an escape (`\\x1b`, `\\n`-as-`\\x0a`, `\\u202e`): one line,
    nothing a terminal would act on. A backslash stays as it is."""
    s = text if isinstance(text, str) else str(text)
    return _UNSAFE.sub(_escape, s) if _UNSAFE.search(s) else s


def shell_word(text: str) -> str:
    """`text` as one word of a command the CLI suggests for pasting (`--model 'fraud model'`, `'a;b'`,
    `'x'"'"'y'`: shlex.quote), its control characters then escaped as `visible` shows them (hostile-user tryout:
    hints pasted with a name holding a space or `;` ran another command)."""
    return visible(shlex.quote(text))


def quoted_name(text: str) -> str:
    """`'fraud'`: a name quoted as prose quotes it, which pasted is also that one shell word (a name holding a
    single quote is quoted as shlex.quote does), control characters escaped (closest-name suggestions)."""
    return visible(shlex.quote(text) if "'" in text else f"'{text}'")


def preview(text: str, cells: int) -> str:
    """The start of `visible(text)` that fits `cells` terminal cells, ending in `…` when cut. An escape counts as
    the width it shows (`\\x00` is 4 cells) and is never cut in two; wide characters count 2."""
    from rich.cells import cell_len

    shown = visible(text)
    if cell_len(shown) <= cells:
        return shown
    out, used = [], 0
    for ch in text:
        piece = visible(ch)
        w = cell_len(piece)
        if used + w > cells - 1:  # keep a cell for the ellipsis
            break
        out.append(piece)
        used += w
    return "".join(out) + "…"


LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class VisibleFormatter(logging.Formatter):
    """Log lines with the message's control characters escaped (event text reaches log messages); a traceback
    appended below it stays readable."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging API
        return visible(super().formatMessage(record))
