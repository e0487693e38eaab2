"""kafka/batch_runs.py's `decode_run` (a run of batches at once, numpy for the fields) against `decode_batch` batch
after batch (the reference): the same ConsumerRecords and sizes whenever it takes a run, and it never takes a run
with a batch `decode_batch` refuses — on tombstones, null keys, headers, long varints (timestamps 8 s apart, large
values, offset gaps), log-append time, and bytes flipped at random."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from kafka import TopicPartition
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from driftline.kafka import decode
from driftline.kafka.decode import FastPartitionRecords, decode_batch
from driftline.kafka.batch_runs import decode_run

headers = st.lists(st.tuples(st.text(max_size=3), st.one_of(st.none(), st.binary(max_size=3))), min_size=1,
                   max_size=2)
record = st.tuples(st.one_of(st.none(), st.binary(max_size=40), st.integers(8200, 8300).map(b"v".__mul__)),
                   st.one_of(st.none(), st.binary(max_size=20)), st.one_of(st.integers(0, 60), st.integers(0, 10**7)),
                   st.one_of(st.just([]), st.just([]), st.just([]), headers), st.integers(1, 9000))
batch = st.tuples(st.lists(record, min_size=0, max_size=12), st.booleans())


def build(spec: list[Any], flips: list[tuple[int, int]]) -> list[DefaultRecordBatch]:
    """The batches (offset deltas spaced by each record's gap, log-append time when asked), decompressed, with
    `flips` (record-section index, byte) xor-ed into their records."""
    out, base = [], 0
    for recs, append_time in spec:
        b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                      producer_epoch=-1, base_sequence=-1, batch_size=10**8)
        delta = 0
        for value, key, ts, hdrs, gap in recs:
            b.append(delta, timestamp=1_700_000_000_000 + ts, key=key, value=value, headers=hdrs)
            delta += gap
        data = bytearray(b.build())
        data[0:8] = base.to_bytes(8, "big")
        if append_time:
            data[22] |= 0x08
        base += delta + 1
        out.append(bytes(data))
    batches = []
    records = MemoryRecords(b"".join(out))
    while (got := records.next_batch()) is not None:
        got._maybe_uncompress()
        batches.append(got)
    for at, xor in flips:
        if batches:
            b = batches[at % len(batches)]
            size = len(b._buffer) - b._pos
            if size:
                b._buffer[b._pos + (at * 7919) % size] ^= xor
    return batches


@settings(max_examples=400, deadline=None)
@given(st.lists(batch, min_size=1, max_size=5), st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 255)),
                                                         max_size=2))
def test_a_run_decodes_as_its_batches_one_by_one(spec: list[Any], flips: list[tuple[int, int]]) -> None:
    batches = build(spec, flips)
    one_by_one = [decode_batch(b, "predictions", 3, 7) for b in batches]
    got = decode_run(batches, "predictions", 3, 7)
    if got is None:
        return  # the caller decodes batch by batch: the reference itself
    assert all(d is not None for d in one_by_one)  # never takes what decode_batch refuses
    records = [r for d in one_by_one for r in d[0]]  # type: ignore[index]
    assert [tuple(r) for r in got[0]] == [tuple(r) for r in records]
    assert [[type(v) for v in r] for r in got[0]] == [[type(v) for v in r] for r in records]
    assert got[1] == [s for d in one_by_one for s in d[1]]  # type: ignore[index]


def test_a_fetch_of_small_producer_batches_is_decoded_in_runs(monkeypatch: Any) -> None:
    """A producer's default batch.size holds ~60 of the simulated events: a fetch of such batches was decoded batch by
    batch (~100 bytecodes of field reads a record); now the plain batches of a fetch are decoded in runs."""
    spec = [([(b'{"v": %d}' % i, b"id-%d" % i, i, [], 1) for i in range(60)], False) for _ in range(10)]
    data = b"".join(bytes(b._buffer) for b in _whole(spec))
    calls: list[int] = []
    monkeypatch.setattr(decode, "decode_batch", lambda *a: calls.append(1))  # type: ignore[func-returns-value]
    got = FastPartitionRecords(0, TopicPartition("predictions", 0), MemoryRecords(data)).take(None)
    assert [r.offset for r in got] == list(range(600)) and calls == []


def _whole(spec: list[Any]) -> list[DefaultRecordBatch]:
    """The batches of `spec` as they come from the broker (not decompressed, crc intact)."""
    out, base = [], 0
    for recs, _ in spec:
        b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                      producer_epoch=-1, base_sequence=-1, batch_size=10**8)
        for i, (value, key, ts, hdrs, _gap) in enumerate(recs):
            b.append(i, timestamp=1_700_000_000_000 + ts, key=key, value=value, headers=hdrs)
        data = bytearray(b.build())
        data[0:8] = base.to_bytes(8, "big")
        base += len(recs)
        out.append(DefaultRecordBatch(bytes(data)))
    return out
