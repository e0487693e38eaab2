"""A run of fetched v2 record batches decoded at once (FastPartitionRecords, decode.py): one Python step per record
finds where each record ends (its length varint), numpy reads every other field of every record of the run
(attributes, timestamp and offset deltas, key and value lengths, the header count) and C-level maps build the
ConsumerRecords. `decode_batch` spent ~100 bytecodes a record on those fields, and numpy's fixed cost per call is
spread over a whole fetch (a producer's batches hold ~60 of these records at its default batch.size), not a batch.

Exactly `decode_batch`'s records, or None whenever any record of the run is anything but its common case (a varint
longer than two bytes in a field, headers, a length that does not add up): the caller then decodes the run batch by
batch as before, so odd data still meets kafka-python's own iteration and its errors.
"""

from __future__ import annotations

from itertools import repeat
from typing import Any

import numpy as np
from kafka.consumer.fetcher import ConsumerRecord
from kafka.record.default_records import DefaultRecordBatch

from .varints import ZIGZAG, varint

_PAD = bytes(8)
"""Zero bytes after the run's records: a field's second byte is read (and ignored) past the last record."""


def _walk(buf: bytes, spans: list[tuple[int, int, int]]) -> list[int] | None:
    """Where each record ends, for batches laid out at `spans` (start, end, record count) in `buf`: the only serial
    part (a record starts where the one before ends); None when a batch's records do not end exactly at its end."""
    ends: list[int] = []
    append, zz = ends.append, ZIGZAG
    try:
        for pos, end, count in spans:
            for _ in range(count):
                b = buf[pos]
                if b < 0x80:
                    pos += zz[b] + 1
                elif (b2 := buf[pos + 1]) < 0x80:
                    pos += zz[(b2 << 7) + b] + 2
                else:
                    length, pos = varint(buf, pos)
                    pos += length
                append(pos)
            if pos != end:
                return None
    except (ValueError, IndexError):
        return None
    return ends


def _short_varints(data: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The zigzag varints starting at positions `at` (values, sizes in bytes); None when one is longer than two
    bytes, or one starts outside `data` (a length gone wrong)."""
    if at.min() < 0 or at.max() + 1 >= len(data):
        return None
    b0 = data[at].astype(np.int64)
    one = b0 < 0x80
    if one.all():
        return (b0 >> 1) ^ -(b0 & 1), np.ones(len(at), dtype=np.int64)
    b1 = data[at + 1].astype(np.int64)
    if not (one | (b1 < 0x80)).all():
        return None
    raw = np.where(one, b0, (b0 & 0x7F) | (b1 << 7))
    return (raw >> 1) ^ -(raw & 1), 2 - one


def decode_run(batches: list[DefaultRecordBatch], topic: str, partition: int, leader_epoch: int
               ) -> tuple[list[ConsumerRecord], list[int]] | None:
    """Every record of decompressed v2 data batches (one leader epoch) as `decode_batch` gives them batch after batch,
    and each one's size in bytes; None when `decode_batch` would not take one of the batches whole."""
    parts = [memoryview(b._buffer)[b._pos:] for b in batches]
    buf = b"".join([*parts, _PAD])
    spans, at = [], 0
    for b, part in zip(batches, parts):
        spans.append((at, at + len(part), b._num_records))
        at += len(part)
    ends = _walk(buf, spans)
    if not ends:
        return None if ends is None else ([], [])
    end = np.array(ends, dtype=np.int64)
    begin = np.concatenate((np.zeros(1, dtype=np.int64), end[:-1]))  # the batches' records lie back to back in buf
    data = np.frombuffer(buf, dtype=np.uint8)
    length = _short_varints(data, begin)  # as the walk read it; three bytes or more: left to decode_batch
    if length is None:
        return None
    pos = begin + length[1]
    fields = []
    for name in ("attributes", "timestamp delta", "offset delta", "key length", "value length"):
        got = _short_varints(data, pos)
        if got is None:
            return None
        fields.append(got[0])
        pos = pos + got[1]
        if name == "key length":
            key_at = pos
            pos = pos + np.maximum(got[0], 0)
    _, ts_delta, offset_delta, key_len, value_len = fields
    value_at = pos
    pos = pos + np.maximum(value_len, 0)
    if not np.array_equal(pos + 1, end) or (data[pos] != 0).any():  # a header count other than 0, or a bad length
        return None
    counts = [count for _, _, count in spans]
    offsets = np.repeat(np.array([b.base_offset for b in batches], dtype=np.int64), counts) + offset_delta
    stamps = np.repeat(np.array([b.first_timestamp for b in batches], dtype=np.int64), counts) + ts_delta
    appended = [b.timestamp_type == b.LOG_APPEND_TIME for b in batches]
    if any(appended):  # log-append time: every record of such a batch has its max timestamp
        latest = np.repeat(np.array([b.max_timestamp for b in batches], dtype=np.int64), counts)
        stamps = np.where(np.repeat(appended, counts), latest, stamps)
    keys, key_lens = _slices(buf, key_at, key_len)
    values, value_lens = _slices(buf, value_at, value_len)
    n = len(ends)
    records = list(map(tuple.__new__, repeat(ConsumerRecord, n), zip(
        repeat(topic, n), repeat(partition, n), repeat(leader_epoch, n), offsets.tolist(), stamps.tolist(),
        _repeat_each([b.timestamp_type for b in batches], counts), keys, values, map(list, repeat((), n)),
        repeat(None, n), key_lens, value_lens, repeat(-1, n))))
    return records, (end - begin - length[1]).tolist()


def _slices(buf: bytes, at: np.ndarray, lengths: np.ndarray) -> tuple[list[Any], list[int]]:
    """buf[at:at + length] for each field (None and length -1 where the length is negative, a null)."""
    got = [buf[a:b] for a, b in zip(at.tolist(), (at + lengths).tolist())]
    if (lengths < 0).any():
        nulls = (lengths < 0).tolist()
        return [None if null else g for g, null in zip(got, nulls)], np.where(lengths < 0, -1, lengths).tolist()
    return got, lengths.tolist()


def _repeat_each(items: list[Any], counts: list[int]) -> list[Any]:
    """Each item repeated its count of times, in order."""
    out: list[Any] = []
    for item, count in zip(items, counts):
        out += repeat(item, count)
    return out
