"""Text saved as UTF-16 or UTF-32 (a Windows editor's "Unicode", PowerShell's Out-File) told from its first bytes,
so the config and replay name the encoding their `iconv -f` line must read: UTF-32 starts with FF FE 00 00 too,
and `iconv -f UTF-16` turned it into text with a NUL after every character."""

from __future__ import annotations

BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"), (b"\xff\xfe", "UTF-16"),
        (b"\xfe\xff", "UTF-16"))
"""Byte-order marks, the longer first (UTF-32 LE's begins with UTF-16 LE's)."""


def wide_encoding(head: bytes) -> tuple[str, str] | None:
    """(the encoding for `iconv -f`, how it was told) of a file starting with `head` (at least its first 8 bytes
    when it has them); None when it is not UTF-16/32. Without a byte-order mark, ASCII text in UTF-16 has a NUL
    byte after (LE) or before (BE) every character."""
    for bom, name in BOMS:
        if head.startswith(bom):
            return name, f"it starts with the byte-order mark {bom.hex(' ').upper()}"
    even, odd = head[0:8:2], head[1:8:2]
    if len(head) >= 4 and not odd.strip(b"\x00") and b"\x00" not in even:
        return "UTF-16LE", "no byte-order mark, a NUL byte after every character"
    if len(head) >= 4 and not even.strip(b"\x00") and b"\x00" not in odd:
        return "UTF-16BE", "no byte-order mark, a NUL byte before every character"
    return None
