"""Kafka's zigzag varints as the record decoders read them (decode.py one record at a time, batch_runs.py a run of
batches at once): the one- and two-byte forms by table, longer ones by kafka-python's `decode_varint`."""

from __future__ import annotations

from kafka.record.util import decode_varint


def varint(buf: bytes, pos: int) -> tuple[int, int]:
    """kafka-python's zigzag varint (`decode_varint`), with the one- and two-byte cases inline."""
    b = buf[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    b2 = buf[pos + 1]
    if b2 < 0x80:
        b = (b & 0x7F) | (b2 << 7)
        return (b >> 1) ^ -(b & 1), pos + 2
    return decode_varint(buf, pos)


def _zigzag_values(n: int) -> list[int]:
    """The zigzag varint values of 0..n-1 (n even): 0, -1, 1, -2, 2, ... (`(v >> 1) ^ -(v & 1)`), built by slices
    (C loops: a Python one over the table's 16,512 values cost 16 M instructions at import)."""
    values = [0] * n
    values[0::2] = range(n // 2)
    values[1::2] = range(-1, -n // 2 - 1, -1)
    return values


ZIGZAG: list[int] = _zigzag_values(0x80) + _zigzag_values(0x4000)
"""Zigzag varints of one and two bytes by table: [b] for a one-byte b < 0x80, [(b2 << 7) + b] for two bytes b ≥ 0x80,
b2 < 0x80 (that index is 0x80 plus the 14-bit value): one lookup instead of four or seven integer operations."""
