"""The dead-letter detail of a payload that is not JSON: msgspec's message, where it went wrong (the bytes around
the position it names) and, for the common mistakes, what to send instead. SRE tryout: a NaN score read
"JSON is malformed: invalid character (byte 145)" and a lone surrogate "Input data was truncated"; neither said
what was wrong with the event."""

from __future__ import annotations

import re

_AT = re.compile(r"\(byte (\d+)\)")
_LONE_SURROGATE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})|\\u[dD][c-fC-F]")
_NON_NUMBERS = (b"NaN", b"Infinity", b"-Infinity", b"+Infinity", b"-NaN")
AROUND = 24
"""Bytes shown on each side of the position msgspec names."""


def json_error_detail(raw: bytes, message: str) -> str:
    """msgspec's decode error `message` for `raw`, with the bytes around its position and a hint when known."""
    m = _AT.search(message)
    hint = ""
    if m is not None:
        pos = int(m.group(1))
        rest = raw[pos:].lstrip(b"-+")
        if any(raw[pos:].startswith(t) or rest.startswith(t) for t in _NON_NUMBERS):
            hint = "; NaN and Infinity are not JSON numbers (send null or leave the field out)"
        elif b"surrogate" in message.encode():
            hint = "; a UTF-16 surrogate escape must come in a high+low pair"
        lo = max(0, pos - AROUND)
        near = raw[lo:pos + AROUND].decode("utf-8", "backslashreplace")
        near = "".join(c if c.isprintable() else repr(c)[1:-1] for c in near)
        return f"{message} near {'…' if lo else ''}{near}{'…' if pos + AROUND < len(raw) else ''}{hint}"
    if message.startswith("Input data was truncated"):
        if _LONE_SURROGATE.search(raw):
            return f"{message}: a lone UTF-16 surrogate escape (e.g. \\ud800) is not a character"
        return f"{message}: the JSON ends before its last value is complete (a cut message or line)"
    return message
