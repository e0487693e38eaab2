"""kafka/decode.py's FastPartitionRecords against kafka-python's own PartitionRecords (the reference): the same
ConsumerRecords, fetch positions, metrics counters and errors for every take(), on batches with tombstones, null
keys, headers, log-append time, gzip, a fetch offset inside a batch, and corrupted bytes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka import TopicPartition
from kafka.consumer.fetcher import Fetcher
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from driftline.kafka.decode import TESTED_VERSIONS, FastPartitionRecords, speed_up

TP = TopicPartition("predictions", 1)

headers = st.lists(st.tuples(st.text(max_size=3), st.one_of(st.none(), st.binary(max_size=3))), max_size=2)
record = st.tuples(st.one_of(st.none(), st.binary(max_size=300)), st.one_of(st.none(), st.binary(max_size=20)),
                   st.integers(0, 10**6), st.one_of(st.just([]), st.just([]), st.just([]), headers))
plain = record.map(lambda r: r[:3] + ([],))  # no headers: the fast path
batch = st.tuples(st.integers(1, 150).flatmap(lambda n: st.lists(st.one_of(plain, record) if n < 5 else plain,
                                                                 min_size=n, max_size=n)),
                  st.sampled_from([0, 1]), st.booleans())


def build(batches: list[Any], base: int) -> bytes:
    """Concatenated v2 batches (gzip when asked, log-append time when asked), offsets from `base`."""
    out, offset = [], base
    for recs, codec, append_time in batches:
        b = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False, producer_id=-1,
                                      producer_epoch=-1, base_sequence=-1, batch_size=10**7)
        for i, (value, key, ts, headers) in enumerate(recs):
            b.append(i, timestamp=1_700_000_000_000 + ts, key=key, value=value, headers=headers)
        data = bytearray(b.build())
        data[0:8] = offset.to_bytes(8, "big")  # base offset
        if append_time:
            data[22] |= 0x08  # attributes: LOG_APPEND_TIME (the crc then fails: tested with check_crcs off)
        out.append(bytes(data))
        offset += len(recs)
    return b"".join(out)


def outcome(cls: Any, data: bytes, fetch_offset: int, takes: list[int | None], check_crcs: bool) -> list[Any]:
    """Every take()'s (of n records, or all when None) records (as tuples) or error, with the fetch position and counters after it."""
    parts = cls(fetch_offset, TP, MemoryRecords(data), check_crcs=check_crcs)
    seen: list[Any] = []
    for n in takes:
        try:
            got: Any = [tuple(r) for r in parts.take(n)]
        except Exception as err:  # noqa: BLE001 - the error is part of what must match
            got = (type(err), str(err))
        seen.append((got, parts.next_fetch_offset, parts.records_read, parts.bytes_read, bool(parts)))
    return seen


@settings(max_examples=150, deadline=None)
@given(st.lists(batch, min_size=1, max_size=4), st.integers(0, 1000), st.one_of(st.integers(0, 10), st.integers(0, 400)),
       st.lists(st.one_of(st.integers(1, 200), st.integers(1, 200), st.just(0), st.none()), min_size=1, max_size=6),
       st.booleans(), st.data())
def test_fast_partition_records_match_kafka_python(batches: list[Any], base: int, skip: int, takes: list[int | None],
                                                   corrupt: bool, data: Any) -> None:
    raw = build(batches, base)
    check = not corrupt and not any(append for _, _, append in batches)
    if corrupt:
        buf = bytearray(raw)
        at = data.draw(st.integers(61, len(buf) - 1))
        buf[at] = data.draw(st.integers(0, 255))
        raw = bytes(buf)
    args = (raw, base + skip, takes + [10**6], check)
    assert outcome(FastPartitionRecords, *args) == outcome(Fetcher.PartitionRecords, *args)


def test_the_crc_is_still_checked() -> None:
    raw = bytearray(build([([(b"v", b"k", 0, [])], 0, False)], 0))
    raw[-1] ^= 0xFF
    for cls in (FastPartitionRecords, Fetcher.PartitionRecords):
        with pytest.raises(Exception, match="crc"):
            cls(0, TP, MemoryRecords(bytes(raw)), check_crcs=True).take(10)


def test_installed_per_client_on_a_tested_version_only() -> None:
    class Client:
        def __init__(self) -> None:
            self._fetcher = type("F", (), {"PartitionRecords": Fetcher.PartitionRecords})()

    client = Client()
    import kafka

    assert speed_up(client) == (kafka.__version__ in TESTED_VERSIONS)
    assert client._fetcher.PartitionRecords is FastPartitionRecords or kafka.__version__ not in TESTED_VERSIONS
    assert Fetcher.PartitionRecords is not FastPartitionRecords  # the class itself is untouched
    assert speed_up(object()) is False
