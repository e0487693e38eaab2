"""kafka/decode.py's FastPartitionRecords against kafka-python's own PartitionRecords (the reference): the same
ConsumerRecords, fetch positions, metrics counters and errors for every take(), on batches with tombstones, null
keys, headers, log-append time, gzip, a fetch offset inside a batch, corrupted bytes, and transactions (commit
and abort markers, read_committed and read_uncommitted)."""

from __future__ import annotations

import struct
from collections import namedtuple
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka import TopicPartition
from kafka.consumer.fetcher import ConsumerRecord, Fetcher, IsolationLevel
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords
from kafka.record.util import calc_crc32c

from driftline.kafka.decode import TESTED_VERSIONS, FastPartitionRecords, speed_up

TP = TopicPartition("predictions", 1)
OFFSET = ConsumerRecord._fields.index("offset")

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


def outcome(cls: Any, data: bytes, fetch_offset: int, takes: list[int | None], check_crcs: bool,
            **kwargs: Any) -> list[Any]:
    """Every take()'s (of n records, or all when None) records (as tuples) or error, with the fetch position and counters after it."""
    parts = cls(fetch_offset, TP, MemoryRecords(data), check_crcs=check_crcs, **kwargs)
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


class _Part:
    """Enough of a PartitionRecords for Fetcher.fetched_records: records at `offsets`, served by take()."""

    def __init__(self, tp: TopicPartition, offsets: list[int]) -> None:
        self.topic_partition, self.next_fetch_offset, self.leader_epoch = tp, offsets[0], -1
        self.left: list[int] | None = list(offsets)

    def __bool__(self) -> bool:
        return self.left is not None

    def take(self, n: int | None = None) -> list[int]:
        assert self.left is not None
        out, self.left = self.left[:n], self.left[len(self.left[:n]):]
        if out:
            self.next_fetch_offset = out[-1] + 1
        else:
            self.drain()  # as kafka-python's record iterator does at its end
        return out

    def drain(self) -> None:
        self.left = None


def _fetcher_with_parked_records(mend: bool) -> tuple[Any, TopicPartition]:
    """kafka-python's own Fetcher.fetched_records in the state seen stuck after a broker reset: records parked
    for a partition paused while they were in line (KAFKA-7548), the partition since resumed, and the other
    partition's drained PartitionRecords still in line."""
    import collections

    from kafka.consumer.subscription_state import SubscriptionState

    from driftline.kafka.decode import restore_resumed

    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    sub = SubscriptionState()
    sub.assign_from_user([a, b])
    sub.seek(a, 6)
    sub.seek(b, 0)
    fetcher = Fetcher.__new__(Fetcher)
    drained = _Part(a, [5])
    drained.take()
    drained.drain()
    fetcher.__dict__.update(config={"max_poll_records": 500}, _subscriptions=sub, _sensors=None,
                            _next_in_line_exception_metadata=None, _completed_fetches=collections.deque(),
                            _paused_completed_fetches={}, _paused_partition_records={b: _Part(b, [0, 1, 2])},
                            _next_partition_records=drained)
    if mend:
        restore_resumed(fetcher)
    return fetcher, b


def test_records_parked_for_a_resumed_partition_come_back_behind_a_drained_one() -> None:
    """kafka-python 3.0.12 restored parked records only while nothing was in line, and a drained PartitionRecords
    stays in line: the resumed partition was excluded from every fetch and never read again."""
    import kafka

    if kafka.__version__ in TESTED_VERSIONS:  # the release mended here
        stuck, b = _fetcher_with_parked_records(mend=False)
        for _ in range(3):
            assert stuck.fetched_records() == ({}, False)
        assert b in stuck._paused_partition_records  # kafka-python alone: parked for good
    mended, b = _fetcher_with_parked_records(mend=True)
    records, _ = mended.fetched_records()
    assert records == {b: [0, 1, 2]} and not mended._paused_partition_records


AbortedTransaction = namedtuple("AbortedTransaction", ["producer_id", "first_offset"])
"""What kafka-python's FetchResponse hands PartitionRecords: a producer and the first offset of its aborted run."""

# a stream of a producer's transactions: (producer 1 or 2, records or None for its end marker, abort?)
txn_step = st.tuples(st.sampled_from([1, 2]), st.one_of(st.none(), st.lists(plain, min_size=1, max_size=20)),
                     st.booleans())


def build_transactional(steps: list[Any], plain_between: list[Any], base: int
                        ) -> tuple[bytes, list[Any], set[int]]:
    """Transactional batches of two producers interleaved with plain ones, a transaction ended by a commit or abort
    control batch (or left open); returns the bytes, the aborted transactions a broker would report with them and
    the offsets of the records those transactions hold."""
    out, offset, open_at, aborted = [], base, {}, []
    held: dict[int, list[int]] = {}
    dropped: set[int] = set()
    for i, (pid, recs, abort) in enumerate(steps):
        if recs is None and pid not in open_at:
            continue  # no marker without an open transaction
        control = recs is None
        b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=True, producer_id=pid,
                                      producer_epoch=0, base_sequence=0, batch_size=10**7)
        if control:  # ControlRecord key: version, type (0 abort, 1 commit); value: version, coordinator epoch
            b.append(0, timestamp=1_700_000_000_000, key=struct.pack(">hh", 0, 0 if abort else 1),
                     value=struct.pack(">hi", 0, 7), headers=[])
            start = open_at.pop(pid)
            offsets = held.pop(pid, [])
            if abort:
                aborted.append(AbortedTransaction(pid, start))
                dropped.update(offsets)
        else:
            open_at.setdefault(pid, offset)
            held.setdefault(pid, []).extend(range(offset, offset + len(recs)))
            for j, (value, key, ts, headers) in enumerate(recs):
                b.append(j, timestamp=1_700_000_000_000 + ts, key=key, value=value, headers=headers)
        data = bytearray(b.build())
        data[0:8] = offset.to_bytes(8, "big")
        if control:
            data[22] |= 0x20  # attributes: control batch
            data[17:21] = calc_crc32c(bytes(data[21:])).to_bytes(4, "big")
        out.append(bytes(data))
        offset += 1 if control else len(recs)
        if i < len(plain_between) and plain_between[i]:
            out.append(build([(plain_between[i], 0, False)], offset))
            offset += len(plain_between[i])
    return b"".join(out), aborted, dropped


@settings(max_examples=150, deadline=None)
@given(st.lists(txn_step, min_size=1, max_size=12), st.lists(st.lists(plain, max_size=5), max_size=12),
       st.integers(0, 1000), st.integers(0, 30),
       st.lists(st.one_of(st.integers(1, 60), st.just(0), st.none()), min_size=1, max_size=5),
       st.sampled_from([IsolationLevel.READ_COMMITTED, IsolationLevel.READ_UNCOMMITTED]))
def test_transactions_and_aborts_match_kafka_python(steps: list[Any], plain_between: list[Any], base: int,
                                                    skip: int, takes: list[int | None], isolation: Any) -> None:
    """Under read_committed the records of aborted transactions are dropped exactly as kafka-python drops them
    (and control batches never reach the engine); under read_uncommitted every data record is served."""
    raw, aborted, dropped = build_transactional(steps, plain_between, base)
    if not raw:
        return
    args = (raw, base + skip, takes + [10**6], True)
    kwargs = {"isolation_level": isolation, "aborted_transactions": aborted}
    fast = outcome(FastPartitionRecords, *args, **kwargs)
    assert fast == outcome(Fetcher.PartitionRecords, *args, **kwargs)
    served = {r[OFFSET] for got, *_ in fast if isinstance(got, list) for r in got}
    if isolation == IsolationLevel.READ_COMMITTED:
        assert not served & dropped


def test_aborted_records_are_not_served_under_read_committed() -> None:
    """A worked case: a committed and an aborted transaction of one producer around a plain record."""
    steps = [(1, [(b"kept", b"k", 0, [])], False), (1, None, False), (1, [(b"aborted", b"k", 0, [])], True),
             (1, None, True)]
    raw, aborted, dropped = build_transactional(steps, [[], [(b"plain", None, 0, [])]], 0)
    assert aborted == [AbortedTransaction(1, 3)] and dropped == {3}
    for cls in (FastPartitionRecords, Fetcher.PartitionRecords):
        committed = cls(0, TP, MemoryRecords(raw), isolation_level=IsolationLevel.READ_COMMITTED,
                        aborted_transactions=aborted).take(None)
        assert [r.value for r in committed] == [b"kept", b"plain"]
        everything = cls(0, TP, MemoryRecords(raw), aborted_transactions=aborted).take(None)
        assert [r.value for r in everything] == [b"kept", b"plain", b"aborted"]


@pytest.mark.timeout(30)  # the hang guard: before, fetched_records() never returned
def test_a_batch_that_cannot_be_decoded_after_records_does_not_spin_fetched_records() -> None:
    """SRE tryout: a producer's lz4 batch (no lz4 library installed) behind plain records. The records came back,
    the error at the next poll, and then kafka-python's fetched_records() looped for good on the failed
    PartitionRecords left in line: `run` spun at 70 % CPU inside poll(), deaf to SIGTERM, /readyz "kafka ok". Now
    each later call raises again (the partition is fetched again from its position), nothing is skipped."""
    import collections

    from kafka.consumer.subscription_state import SubscriptionState

    from driftline.kafka.decode import restore_resumed

    plain_batch = build([([(b"v%d" % i, b"k", 0, []) for i in range(3)], 0, False)], 0)
    bad = bytearray(build([([(b"w", b"k", 0, [])], 1, False)], 3))
    bad[22] = (bad[22] & ~0x07) | 0x05  # attributes: compression codec 5, which no kafka-python decodes
    tp = TopicPartition("t", 0)
    sub = SubscriptionState()
    sub.assign_from_user([tp])
    sub.seek(tp, 0)
    fetcher = Fetcher.__new__(Fetcher)
    part = FastPartitionRecords(0, tp, MemoryRecords(plain_batch + bytes(bad)), check_crcs=False)
    fetcher.__dict__.update(config={"max_poll_records": 500}, _subscriptions=sub, _sensors=None,
                            _next_in_line_exception_metadata=None, _completed_fetches=collections.deque(),
                            _paused_completed_fetches={}, _paused_partition_records={},
                            _next_partition_records=part)
    restore_resumed(fetcher)
    records, _ = fetcher.fetched_records()
    assert [r.offset for r in records[tp]] == [0, 1, 2] and sub.assignment[tp].position.offset == 3
    with pytest.raises(Exception):
        fetcher.fetched_records()  # the error, once the records before it were given out
    assert fetcher.fetched_records() == ({}, False)  # returns: the partition is fetched again from offset 3
    assert fetcher._next_partition_records is None and sub.assignment[tp].position.offset == 3


@pytest.mark.parametrize("codec", [1, 2, 3, 4], ids=["gzip", "snappy", "lz4", "zstd"])
def test_every_producer_compression_is_decoded(codec: int) -> None:
    """SRE tryout: only gzip could be read (kafka-python's other codecs need lz4, python-snappy and zstandard, which
    driftline did not install): a producer with `compression.type=lz4` (or snappy, zstd) stopped its partition with
    UnsupportedCodecError. They are dependencies now (kafka-python's extras)."""
    raw = build([([(b"v%d" % i, b"k", 0, []) for i in range(5)], codec, False)], 10)
    records = FastPartitionRecords(10, TP, MemoryRecords(raw), check_crcs=True).take(None)
    assert [(r.offset, r.value) for r in records] == [(10 + i, b"v%d" % i) for i in range(5)]
