"""Reading JSON-lines input: numbered, stripped, non-blank lines, with memory bounded whatever the lines' sizes.

`json_line_blocks` reads plain files and stdin a block (256 KiB) at a time and splits it with C-level calls (the hot
path of `replay`); `json_lines` gives the same lines one by one. Compressed streams and other file objects are read
a line at a time by `_by_readline`, the reference the block reader reproduces exactly (tests/test_lines.py): a
damaged compressed stream then stops at exactly the same line as it always did.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator, Sequence
from itertools import compress
from typing import IO

from .limits import DEFAULT_LIMITS

UTF8_BOM = b"\xef\xbb\xbf"
BLOCK = 1 << 18
"""Bytes read at a time by the block reader (one line may also be carried over: at most max_bytes + 1 more)."""
_SKIP_CHUNK = 1 << 16
"""Bytes read at a time while discarding the rest of an oversized line."""

Keep = Callable[[int, bytes], bool]
"""keep_unterminated(lineno, payload): whether a last line without its newline is yielded."""


def json_lines(fh: IO[bytes], keep_unterminated: Keep | None = None,
               max_bytes: int = DEFAULT_LIMITS.max_event_bytes) -> Iterator[tuple[int, bytes]]:
    """(line number from 0, payload) of each non-blank line, surrounding whitespace (CR too) stripped, and a
    UTF-8 byte-order mark at the start of the file dropped (editors on Windows write one). A last line without
    its newline (perhaps still being written) is yielded only if `keep_unterminated(lineno, payload)` agrees.

    Memory is bounded: a line longer than `max_bytes` is yielded as its first `max_bytes + 1` bytes (so it decodes
    as `too_large`) and the rest of it is read in chunks and discarded up to its newline."""
    for numbers, payloads in json_line_blocks(fh, keep_unterminated, max_bytes):
        yield from zip(numbers, payloads)


def json_line_blocks(fh: IO[bytes], keep_unterminated: Keep | None = None,
                     max_bytes: int = DEFAULT_LIMITS.max_event_bytes
                     ) -> Iterator[tuple[Sequence[int], list[bytes]]]:
    """`json_lines` a block at a time: (line numbers, payloads) of the lines of each block read, in order."""
    if not isinstance(fh, (io.BufferedReader, io.BytesIO)):  # gzip, bzip2, xz or another reader: line by line
        for lineno, payload in _by_readline(fh, keep_unterminated, max_bytes):
            yield (lineno,), [payload]
        return
    read = fh.read1
    cap = max_bytes + 2  # a line of max_bytes and CRLF still fits (as readline(cap) sees it)
    lineno = 0  # number of the next line
    carry = b""  # the start of a line whose newline is not read yet (shorter than cap)
    skipping = False  # inside an oversized line already yielded: discard up to its newline
    while True:
        block = read(BLOCK)
        if not block:
            break
        if skipping:
            end = block.find(b"\n")
            if end < 0:
                continue
            block, skipping = block[end + 1:], False
        lines = (carry + block if carry else block).split(b"\n")
        carry = lines.pop()
        if lines:
            yield _complete(lines, lineno, cap, max_bytes)
            lineno += len(lines)
        if len(carry) >= cap:  # readline(cap) would return it cut, without its newline: oversized
            yield (lineno,), [carry[:max_bytes + 1]]
            lineno, carry, skipping = lineno + 1, b"", True
    if carry:
        payload = _stripped(carry, lineno)
        if payload and (keep_unterminated is None or keep_unterminated(lineno, payload)):
            yield (lineno,), [payload]


def _complete(lines: list[bytes], first: int, cap: int, max_bytes: int) -> tuple[Sequence[int], list[bytes]]:
    """(line numbers, payloads) of complete lines (newlines removed) numbered from `first`: stripped, blank ones
    left out, an oversized one cut to `max_bytes + 1` bytes as it is."""
    if max(map(len, lines)) >= cap:
        numbers, payloads = [], []
        for i, line in enumerate(lines):
            payload = line[:max_bytes + 1] if len(line) >= cap else _stripped(line, first + i)
            if payload:
                numbers.append(first + i)
                payloads.append(payload)
        return numbers, payloads
    payloads = list(map(bytes.strip, lines))
    if first == 0 and payloads[0].startswith(UTF8_BOM):
        payloads[0] = payloads[0][len(UTF8_BOM):].strip()
    kept = list(filter(None, payloads))
    if len(kept) == len(payloads):
        return range(first, first + len(payloads)), payloads
    return list(compress(range(first, first + len(payloads)), payloads)), kept


def _stripped(line: bytes, lineno: int) -> bytes:
    """The line's payload: surrounding whitespace stripped, and the byte-order mark on the first line."""
    payload = line.strip()
    if lineno == 0 and payload.startswith(UTF8_BOM):
        payload = payload[len(UTF8_BOM):].strip()
    return payload


def _by_readline(fh: IO[bytes], keep_unterminated: Keep | None, max_bytes: int) -> Iterator[tuple[int, bytes]]:
    """`json_lines` read with `readline`, a line at a time (the reference, and the reader of compressed input)."""
    readline = fh.readline
    cap = max_bytes + 2  # a line of max_bytes and CRLF still fits
    lineno = -1
    while True:
        line = readline(cap)
        if not line:
            return
        lineno += 1
        if len(line) == cap and not line.endswith(b"\n"):
            while True:  # oversized: skip the rest of the line without keeping it
                rest = readline(_SKIP_CHUNK)
                if not rest or rest.endswith(b"\n"):
                    break
            yield lineno, line[:max_bytes + 1]
            continue
        payload = line.strip()
        if lineno == 0 and payload.startswith(UTF8_BOM):
            payload = payload[len(UTF8_BOM):].strip()
        if payload and (keep_unterminated is None or line.endswith(b"\n") or keep_unterminated(lineno, payload)):
            yield lineno, payload


__all__ = ["UTF8_BOM", "json_line_blocks", "json_lines"]
