"""The dead-letter detail of a payload that is not JSON: msgspec's message, where it went wrong (the bytes around
the position it names, or that is found) and, for the common mistakes, what to send instead. SRE tryout: a NaN
score read "JSON is malformed: invalid character (byte 145)" and a lone surrogate "Input data was truncated";
neither said what was wrong with the event. A position is said "at byte offset N" (new-user tryout: msgspec's
"(byte 91)" read like the value of a byte, not where it is)."""

from __future__ import annotations

import re

_AT = re.compile(r"\(byte (\d+)\)")
_LONE_SURROGATE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})|"
                             rb"(?<![0-9a-fA-F]{2}[89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}")
_NON_NUMBERS = (b"NaN", b"Infinity", b"-Infinity", b"+Infinity", b"-NaN")
AROUND = 24
"""Bytes shown on each side of the position."""


def offset(pos: int) -> str:
    """'at byte offset 91': a position in a payload, never to be read as a byte's value."""
    return f"at byte offset {pos}"


def json_error_detail(raw: bytes, message: str) -> str:
    """msgspec's decode error `message` for `raw`, with where it went wrong and a hint when known."""
    at = _AT.search(message)
    message = _AT.sub(lambda m: offset(int(m.group(1))), message)
    lone = _LONE_SURROGATE.search(raw)
    if lone is not None and ("truncated" in message or "escape" in message or "surrogate" in message):
        pos = lone.start()
        return (f"invalid string: a lone UTF-16 surrogate escape {lone.group().decode()} {offset(pos)} is not a "
                f"character (escapes of characters beyond U+FFFF come in high+low pairs; msgspec: {message})"
                + _near(raw, pos))
    if at is not None:
        pos = int(at.group(1))
        rest = raw[pos:].lstrip(b"-+")
        hint = ""
        if any(raw[pos:].startswith(t) or rest.startswith(t) for t in _NON_NUMBERS):
            hint = "; NaN and Infinity are not JSON numbers (send null or leave the field out)"
        return f"{message}{_near(raw, pos)}{hint}"
    if message.startswith("Invalid UTF-8"):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as err:
            return f"{message} {offset(err.start)}{_near(raw, err.start)}"
    if message.startswith("Input data was truncated"):
        return f"{message}: the JSON ends before its last value is complete (a cut message or line)"
    return message


def _near(raw: bytes, pos: int) -> str:
    """' near …<the bytes around pos>…', unprintable characters escaped."""
    lo = max(0, pos - AROUND)
    near = raw[lo:pos + AROUND].decode("utf-8", "backslashreplace")
    near = "".join(c if c.isprintable() else repr(c)[1:-1] for c in near)
    return f" near {'…' if lo else ''}{near}{'…' if pos + AROUND < len(raw) else ''}"
