"""Text from events made safe to show: control characters escaped visibly (read by every layer that prints).

Event data (model, variant and feature names, values, dead-letter payloads) reaches terminals, logs and reports.
An ESC or BEL in it could retitle the terminal, clear the screen or fake output, so every human-readable
renderer passes such text through `visible()`; JSON output keeps the exact text.
"""

from __future__ import annotations

import logging
import re
import shlex
from collections.abc import Iterable

_UNSAFE = re.compile("[\x00-\x1f\x7f-\xa0\xad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2"
                     "\u115f\u1160\u1680\u17b4\u17b5\u180b-\u180f\u2000-\u200f\u2028-\u202f\u205f-\u206f"
                     "\u3000\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb\U000110bd\U000110cd"
                     "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]")
"""C0 and C1 controls and DEL; every format character (Unicode category Cf: zero-width space and joiners, soft
hyphen, the bidirectional overrides of "Trojan source", BOM, tags); line/paragraph separators and every space but
the ASCII one (no-break, thin, ideographic); and the other default-ignorable code points (variation selectors,
Hangul fillers). Each draws nothing or looks like a plain space, so two names differing only in one looked the
same (hostile-user tryout: 'fr\\u200baud' next to 'fraud' in `models list`). tests/test_terminal_safety.py checks
this against the running Python's Unicode tables."""


def _escape_code(c: int) -> str:
    """How `visible` writes code point `c`: `\\x1b`, `\\u200b`, `\\U000e0041` (lower-case hex)."""
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}" if c < 0x10000 else f"\\U{c:08x}"


def _escape(m: re.Match[str]) -> str:
    return _escape_code(ord(m.group()))


def visible(text: object) -> str:
    """`text` with every control, format or invisible character shown as an escape (`\\x1b`, `\\n`-as-`\\x0a`,
    `\\u202e`, `\\u200b`, `\\xa0`): one line, nothing a terminal would act on, nothing unseen. A backslash stays
    as it is."""
    s = text if isinstance(text, str) else str(text)
    return _UNSAFE.sub(_escape, s) if _UNSAFE.search(s) else s


def _ansi_escape(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x80 else f"\\u{c:04x}" if c < 0x10000 else f"\\U{c:08x}"


def ansi_c_word(text: str) -> str:
    """`$'evil\\x1b[31mRED'`: `text` in the shell's ANSI-C quoting (bash, zsh, ksh), each character `visible`
    escapes written as an escape the shell turns back into it (`\\u00a0`, not `\\xa0`: in `$'…'` that is one
    byte, not the character), a backslash and a single quote escaped. Tryout: the hint `'evil\\x1b[31mRED'`, pasted,
    named a model with a literal backslash, so `models forget` refused the name it had just suggested."""
    body = text.replace("\\", "\\\\").replace("'", "\\'")
    return "$'" + _UNSAFE.sub(_ansi_escape, body) + "'"


_UNSAFE_OR_BACKSLASH = re.compile("\\\\|" + _UNSAFE.pattern)


def _escape_exact(m: re.Match[str]) -> str:
    return "\\\\" if m.group() == "\\" else _escape(m)


def visible_exact(text: object) -> str:
    """`visible(text)` with every backslash doubled too, so distinct texts never show the same ('a\\x1b', an ESC,
    and 'a\\\\x1b', a backslash then 'x1b', stay apart): each backslash shown starts exactly one escape, which
    reads back unambiguously. For Prometheus label values, where two names shown alike would be one series."""
    s = text if isinstance(text, str) else str(text)
    return _UNSAFE_OR_BACKSLASH.sub(_escape_exact, s) if _UNSAFE_OR_BACKSLASH.search(s) else s


def shell_word(text: str) -> str:
    """`text` as one word of a command the CLI suggests for pasting (`--model 'fraud model'`, `'a;b'`,
    `'x'"'"'y'`: shlex.quote; hostile-user tryout: hints pasted with a name holding a space or `;` ran another
    command); a name holding a character `visible` escapes is written `$'…'` (`ansi_c_word`), so the pasted word
    is the name itself, never its escaped display."""
    return ansi_c_word(text) if _UNSAFE.search(text) else shlex.quote(text)


def quoted_name(text: str) -> str:
    """`'fraud'`: a name quoted as prose quotes it, which pasted is also that one shell word (a name holding a
    single quote is quoted as shlex.quote does, one holding a character `visible` escapes as `$'…'`: closest-name
    suggestions)."""
    if _UNSAFE.search(text):
        return ansi_c_word(text)
    return shlex.quote(text) if "'" in text else f"'{text}'"


_TYPED_ESCAPE = re.compile(r"\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8})")
"""An escape as a user may type one back: `\\x1b`, `\\u200b`, `\\U000e0041`, hex digits in either case."""


def _canonical_escape(m: re.Match[str]) -> str:
    c = int(m.group()[2:], 16)
    return _escape_code(c) if c <= 0x10FFFF else m.group()


def _canonical(shown_text: str) -> str:
    """`shown_text` with each escape written as `visible` writes it (lower-case hex, the shortest of `\\x`, `\\u`,
    `\\U`), so `\\uFEFF` and `\\u00A0` read as `\\ufeff` and `\\xa0`."""
    return _TYPED_ESCAPE.sub(_canonical_escape, shown_text) if "\\" in shown_text else shown_text


def shown_as(typed: str, names: Iterable[str]) -> list[str]:
    """The names whose `visible` form is `typed` and which differ from it: what a user means who types a name as
    it was shown (`'evil\\x1b[31mRED'`, a literal backslash) for one holding a control character. Escapes compare
    by the character they name, hex digits in either case: in a C/POSIX locale bash expands a hint's
    `$'\\ufeffm'` to the text `\\uFEFFm` and `$'a\\u00a0b'` to `a\\u00A0b` (tryout: the pasted hint was refused)."""
    want = _canonical(typed)
    return [n for n in names if n != typed and _canonical(visible(n)) == want]


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
