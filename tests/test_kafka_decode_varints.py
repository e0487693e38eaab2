"""kafka/decode.py's `decode_batch` (varints' one- and two-byte forms inline) against its previous version, frozen
below verbatim (every varint through `_varint`): the same records, sizes and refusals (None) on v2 batches with
long keys and values, large timestamp and offset deltas, and bytes overwritten anywhere in the records (truncated,
overlong or non-canonical varints, header counts) — or None where the old one decoded, never the reverse."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.consumer.fetcher import ConsumerRecord
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from driftline.kafka.decode import decode_batch
from driftline.kafka.varints import varint as _varint


def frozen_decode_batch(batch: DefaultRecordBatch, topic: str, partition: int, leader_epoch: int
                        ) -> list[tuple[ConsumerRecord, int]] | None:
    """decode_batch as it was before the inline varints (verbatim)."""
    if type(batch) is not DefaultRecordBatch or batch.is_control_batch:
        return None
    batch._maybe_uncompress()
    buf, pos, count = bytes(batch._buffer), batch._pos, batch._num_records
    ts_type = batch.timestamp_type
    base_offset, first_ts = batch.base_offset, batch.first_timestamp
    log_append = ts_type == batch.LOG_APPEND_TIME
    max_ts = batch.max_timestamp
    out: list[tuple[ConsumerRecord, int]] = []
    new = tuple.__new__  # the namedtuple without its Python-level __new__
    try:
        for _ in range(count):
            length, start = _varint(buf, pos)
            _, pos = _varint(buf, start)  # attributes
            ts_delta, pos = _varint(buf, pos)
            offset_delta, pos = _varint(buf, pos)
            key_len, pos = _varint(buf, pos)
            key = None
            if key_len >= 0:
                key = buf[pos:pos + key_len]
                pos += key_len
            value_len, pos = _varint(buf, pos)
            value = None
            if value_len >= 0:
                value = buf[pos:pos + value_len]
                pos += value_len
            headers, pos = _varint(buf, pos)
            if headers != 0 or pos - start != length or pos > len(buf):
                return None
            out.append((new(ConsumerRecord, (topic, partition, leader_epoch, base_offset + offset_delta,
                                             max_ts if log_append else first_ts + ts_delta, ts_type, key, value, [],
                                             None, len(key) if key is not None else -1,
                                             len(value) if value is not None else -1, -1)), length))
    except (ValueError, IndexError):
        return None
    return out if pos == len(buf) else None


record = st.tuples(st.one_of(st.none(), st.binary(max_size=9000)), st.one_of(st.none(), st.binary(max_size=200)),
                   st.integers(-10**7, 10**9), st.sampled_from([[], [], [], [("h", b"v")]]))
edit = st.tuples(st.integers(0, 10**6), st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0x81, 0xFF]) | st.integers(0, 255))


def _batch(recs: list[Any], gaps: int, append_time: bool, edits: list[tuple[int, int]]) -> DefaultRecordBatch:
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                  producer_epoch=-1, base_sequence=-1, batch_size=10**8)
    for i, (value, key, ts, headers) in enumerate(recs):
        b.append(i * gaps, timestamp=1_700_000_000_000 + ts, key=key, value=value, headers=headers)
    data = bytearray(b.build())
    data[0:8] = (12345).to_bytes(8, "big")
    if append_time:
        data[22] |= 0x08
    for at, byte in edits:
        if len(data) > 61:
            data[61 + at % (len(data) - 61)] = byte
    return DefaultRecordBatch(bytes(data))


@settings(max_examples=400, deadline=None)
@given(st.lists(record, min_size=1, max_size=40), st.sampled_from([1, 1, 70, 9000]), st.booleans(),
       st.lists(edit, max_size=3))
def test_inline_varints_decode_as_before(recs: list[Any], gaps: int, append_time: bool,
                                         edits: list[tuple[int, int]]) -> None:
    old = frozen_decode_batch(_batch(recs, gaps, append_time, edits), "predictions", 3, 7)
    new = decode_batch(_batch(recs, gaps, append_time, edits), "predictions", 3, 7)
    if new is None or old is None:  # None: kafka-python's own iteration decides (so any refusal is safe)
        assert new is None or old is not None
        if not edits:  # untouched batches: refused only for their headers
            assert (new is None) == (old is None)
        return
    assert [(tuple(r), n) for r, n in zip(*new, strict=True)] == [(tuple(r), n) for r, n in old]


def test_two_byte_timestamp_and_offset_deltas_are_decoded_inline(monkeypatch: Any) -> None:
    """A batch of 200 records 10 ms apart (offset deltas from 64 and timestamp deltas from 64 ms take two bytes, as
    in any batch of more than 64 records or longer than 64 ms) is decoded without one call of the general `_varint`
    (it went through it twice a record: ~4,000 of 23,000 instructions a record on kafka_decode_instructions.py's
    500-record batches), to the records the previous version gives."""
    import driftline.kafka.decode as decode

    recs = [(b"v" * 40, b"k%d" % i, i * 10, []) for i in range(200)]
    expected = frozen_decode_batch(_batch(recs, 1, False, []), "predictions", 3, 7)

    def general(buf: bytes, pos: int) -> tuple[int, int]:
        raise AssertionError(f"_varint called at {pos}")

    monkeypatch.setattr(decode, "varint", general)
    got = decode_batch(_batch(recs, 1, False, []), "predictions", 3, 7)
    assert got is not None and expected is not None
    assert [(tuple(r), n) for r, n in zip(*got, strict=True)] == [(tuple(r), n) for r, n in expected]


def test_the_zigzag_table_is_the_inline_arithmetic_for_every_one_and_two_byte_varint() -> None:
    """decode_batch's table lookups equal the arithmetic they replaced (`b = (b & 0x7F) | (b2 << 7)` then
    `(b >> 1) ^ -(b & 1)`), for every one-byte b < 0x80 and every two-byte pair b ≥ 0x80, b2 < 0x80, and kafka-python's
    own `decode_varint` of those bytes."""
    from kafka.record.util import decode_varint

    from driftline.kafka.varints import ZIGZAG as _ZIGZAG

    for b in range(0x80):
        assert _ZIGZAG[b] == (b >> 1) ^ -(b & 1) == decode_varint(bytes([b]), 0)[0]
    for b in range(0x80, 0x100):
        for b2 in range(0x80):
            v = (b & 0x7F) | (b2 << 7)
            assert _ZIGZAG[(b2 << 7) + b] == (v >> 1) ^ -(v & 1) == decode_varint(bytes([b, b2]), 0)[0]
