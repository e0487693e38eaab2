"""Faster unpacking of fetched records for this consumer's kafka-python client: kafka-python decodes each record
through ~40 Python calls (~56,000 instructions a record, a quarter of `driftline run`'s CPU); the consecutive plain
v2 batches of a fetch are decoded here together (batch_runs.py; a lone small batch in one loop, `decode_batch`), to
exactly the ConsumerRecords kafka-python builds, and take() hands them out in slices with the fetch position and
counters kafka-python would leave after each record.

Only the common case is taken: a magic-2 data batch, no (de)serialisers (driftline sets none), records without
headers and a batch that decodes cleanly to its end; anything else (control batches, headers, corrupt or odd data)
goes through kafka-python's own per-record iteration, so its records and errors are exactly what they always were.
Installed per client (`speed_up`), only on the kafka-python version it is tested against.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import kafka
from kafka.consumer.fetcher import ConsumerRecord, Fetcher, IsolationLevel
from kafka.errors import CorruptRecordError
from kafka.record.default_records import DefaultRecordBatch

from .batch_runs import decode_run
from .varints import ZIGZAG, varint

TESTED_VERSIONS = ("3.0.12",)
"""kafka-python versions whose PartitionRecords this subclass is pinned against (tests/test_kafka_decode.py)."""

log = logging.getLogger(__name__)

RUN_RECORDS, RUN_BYTES = 64, 512 << 10
"""Consecutive plain batches are decoded together (batch_runs.py) once they hold 64 records or more (fewer: numpy's
fixed cost per call is more than it saves), in runs of up to 512 KiB (a whole fetch at once is slower again: its
records are sliced out of a buffer larger than the cache)."""


def decode_batch(batch: DefaultRecordBatch, topic: str, partition: int, leader_epoch: int
                 ) -> tuple[list[ConsumerRecord], list[int]] | None:
    """Every record of an uncompressed-or-decompressed v2 data batch whose records carry no headers, as
    kafka-python's iteration gives them, and each one's size in bytes; None when the batch is anything else (then
    kafka-python's iteration is the reference, errors included)."""
    if type(batch) is not DefaultRecordBatch or batch.is_control_batch:
        return None
    batch._maybe_uncompress()
    buf, pos, count = bytes(batch._buffer), batch._pos, batch._num_records
    ts_type = batch.timestamp_type
    base_offset, first_ts = batch.base_offset, batch.first_timestamp
    log_append = ts_type == batch.LOG_APPEND_TIME
    max_ts = batch.max_timestamp
    out: list[ConsumerRecord] = []
    sizes: list[int] = []
    new = tuple.__new__  # the namedtuple without its Python-level __new__
    append, size, end, zz = out.append, sizes.append, len(buf), ZIGZAG
    try:
        for _ in range(count):  # each varint's one- and two-byte forms inline by table (`varint` for longer)
            b = buf[pos]
            if b < 0x80:
                length, start = zz[b], pos + 1
            elif (b2 := buf[pos + 1]) < 0x80:
                length, start = zz[(b2 << 7) + b], pos + 2
            else:
                length, start = varint(buf, pos)
            pos = start + 1 if buf[start] < 0x80 else varint(buf, start)[1]  # attributes (unused)
            b = buf[pos]
            if b < 0x80:
                ts_delta = zz[b]
                pos += 1
            elif (b2 := buf[pos + 1]) < 0x80:  # two bytes: a record 64 ms or more after its batch's first
                ts_delta = zz[(b2 << 7) + b]
                pos += 2
            else:
                ts_delta, pos = varint(buf, pos)
            b = buf[pos]
            if b < 0x80:
                offset_delta = zz[b]
                pos += 1
            elif (b2 := buf[pos + 1]) < 0x80:  # two bytes: the 65th to 8,192nd record of a batch
                offset_delta = zz[(b2 << 7) + b]
                pos += 2
            else:
                offset_delta, pos = varint(buf, pos)
            b = buf[pos]
            if b < 0x80:
                key_len = zz[b]
                pos += 1
            else:
                key_len, pos = varint(buf, pos)
            if key_len >= 0:
                key = buf[pos:pos + key_len]
                pos += key_len
            else:
                key, key_len = None, -1
            b = buf[pos]
            if b < 0x80:
                value_len = zz[b]
                pos += 1
            elif (b2 := buf[pos + 1]) < 0x80:
                value_len = zz[(b2 << 7) + b]
                pos += 2
            else:
                value_len, pos = varint(buf, pos)
            if value_len >= 0:
                value = buf[pos:pos + value_len]
                pos += value_len
            else:
                value, value_len = None, -1
            if buf[pos] != 0:  # a header count other than a one-byte 0: kafka-python's iteration decides
                return None
            pos += 1
            if pos - start != length or pos > end:  # within the buffer: the key and value are whole (their lengths)
                return None
            append(new(ConsumerRecord, (topic, partition, leader_epoch, base_offset + offset_delta,
                                        max_ts if log_append else first_ts + ts_delta, ts_type, key, value, [],
                                        None, key_len, value_len, -1)))
            size(length)
    except (ValueError, IndexError):
        return None
    return (out, sizes) if pos == end else None


_READY = object()
"""Yielded by FastPartitionRecords' generator when it has decoded a batch into `_ready` for take() to serve."""


class FastPartitionRecords(Fetcher.PartitionRecords):  # type: ignore[misc, name-defined]
    """kafka-python's PartitionRecords with `decode_batch` for the common batch, served by take() in slices (the
    fetch position and counters updated once per slice, not once per record through a generator, islice and
    dropwhile). The batch walk follows kafka-python 3.0.12's `_unpack_records` (crc check, aborted transactions,
    control batches, the fetch position) and take() its `take` and `_maybe_skip_record`."""

    def __init__(self, fetch_offset: int, tp: Any, records: Any, key_deserializer: Any = None,
                 value_deserializer: Any = None, **kwargs: Any) -> None:
        super().__init__(fetch_offset, tp, records, key_deserializer, value_deserializer, **kwargs)
        self._fast = key_deserializer is None and value_deserializer is None
        self._ready: list[ConsumerRecord] = []
        """The decoded batch being served; `_sizes` its records' sizes, `_at` the next one to take."""
        self._sizes: list[int] = []
        self._at = 0
        self.failed = False
        """Its record walk raised (a batch it cannot decode): it holds nothing more (restore_resumed clears it)."""
        self._skipping = True
        """Records below fetch_offset are still dropped (kafka-python's dropwhile: only until the first kept one)."""
        if self._fast:  # the parent's iterator (a dropwhile over a generator not yet started) is replaced
            self.record_iterator = self._unpack_records(tp, records, None, None)

    def take(self, n: int | None = None) -> list[ConsumerRecord]:
        """Up to n records (all when None), as kafka-python's take: an error after some records is kept for the
        next call."""
        if not self._fast:
            return super().take(n)
        self._maybe_raise_next_inline_exception()
        if self.record_iterator is None:  # drained: what kafka-python's islice(None, 0, n) raises
            raise TypeError("'NoneType' object is not iterable")
        records: list[ConsumerRecord] = []
        want = -1 if n is None else n
        try:
            while len(records) != want:
                ready, at = self._ready, self._at
                if at < len(ready):
                    if self._skipping:
                        self._skip_ready()
                        continue
                    end = len(ready) if want < 0 else min(len(ready), at + want - len(records))
                    records += ready[at:end]
                    self._served(at, end)
                    continue
                if self.record_iterator is None:
                    break
                record = next(self.record_iterator, None)
                if record is None:
                    break
                if record is not _READY and not (self._skipping and self._maybe_skip_record(record)):
                    self._skipping = False
                    records.append(record)
        except Exception as err:  # noqa: BLE001 - as kafka-python's take: raised now, or at the next call
            self.failed = True
            if not records:
                raise
            self._next_inline_exception = err
        return records

    def _skip_ready(self) -> None:
        """Drop the ready records below fetch_offset (counted as read, as kafka-python's dropwhile does)."""
        ready, at, end = self._ready, self._at, self._at
        while end < len(ready) and ready[end].offset < self.fetch_offset:
            end += 1
        if end < len(ready):
            self._skipping = False
        if end > at:
            self._served(at, end)

    def _served(self, at: int, end: int) -> None:
        """Ready records [at, end) taken: the position and counters as after kafka-python yielded each."""
        self._at = end
        self.records_read += end - at
        self.bytes_read += sum(self._sizes[at:end])
        self.next_fetch_offset = self._ready[end - 1].offset + 1

    def _unpack_records(self, tp: Any, records: Any, key_deserializer: Any, value_deserializer: Any
                        ) -> Iterator[Any]:
        if key_deserializer is not None or value_deserializer is not None:
            yield from super()._unpack_records(tp, records, key_deserializer, value_deserializer)
            return
        run: list[DefaultRecordBatch] = []  # plain batches not decoded yet: decoded together (batch_runs.py)
        run_bytes = 0  # their buffers' bytes
        batch = yield from self._next_batch(tp, records, run)
        last_batch = None
        while batch is not None:
            last_batch = batch
            if self.check_crcs and not batch.validate_crc():
                yield from self._flush(tp, run)
                raise CorruptRecordError(
                    "Record batch for partition %s at offset %s failed crc check" % (
                        self.topic_partition, batch.base_offset))
            if batch.magic == 2:
                if run and batch.leader_epoch != self.leader_epoch:
                    yield from self._flush(tp, run)
                self.leader_epoch = batch.leader_epoch
                if (self.isolation_level == IsolationLevel.READ_COMMITTED
                        and batch.has_producer_id()):
                    self._consume_aborted_transactions_up_to(batch.last_offset)
                    producer_id = batch.producer_id
                    if self._contains_abort_marker(batch):
                        self.aborted_producer_ids.discard(producer_id)
                    elif self._is_batch_aborted(batch):
                        yield from self._flush(tp, run)
                        self.next_fetch_offset = batch.next_offset
                        batch = yield from self._next_batch(tp, records, run)
                        continue
                if batch.is_control_batch:
                    yield from self._flush(tp, run)
                    self.next_fetch_offset = batch.next_offset
                    batch = yield from self._next_batch(tp, records, run)
                    continue
            if type(batch) is DefaultRecordBatch:
                try:
                    batch._maybe_uncompress()
                except Exception:  # an unsupported or broken codec: raised after the records before it
                    yield from self._flush(tp, run)
                    raise
                run.append(batch)
                run_bytes = len(batch._buffer) + (run_bytes if len(run) > 1 else 0)
                if run_bytes >= RUN_BYTES:
                    yield from self._flush(tp, run)
            else:
                yield from self._flush(tp, run)
                yield from self._decoded(tp, batch)
            batch = yield from self._next_batch(tp, records, run)
        yield from self._flush(tp, run)
        if last_batch and last_batch.magic == 2:
            self.next_fetch_offset = last_batch.next_offset
        self.drain()

    def _next_batch(self, tp: Any, records: Any, run: list[DefaultRecordBatch]) -> Iterator[Any]:
        """records.next_batch(); when it raises, the run gathered so far is served first (as batch after batch)."""
        try:
            return records.next_batch()
        except Exception:
            yield from self._flush(tp, run)
            raise

    def _flush(self, tp: Any, run: list[DefaultRecordBatch]) -> Iterator[Any]:
        """Serve the run's records (emptying it): decoded at once (`decode_run`) when it holds RUN_RECORDS records or
        more, else (or when the run is anything odd) batch by batch as before."""
        if not run:
            return
        batches = run[:]
        run.clear()
        decoded = None
        if sum(b._num_records for b in batches) >= RUN_RECORDS:
            decoded = decode_run(batches, tp.topic, tp.partition, self.leader_epoch)
        if decoded is None:
            for batch in batches:
                yield from self._decoded(tp, batch)
        elif decoded[0]:
            self._ready, self._sizes = decoded
            self._at = 0
            yield _READY

    def _decoded(self, tp: Any, batch: Any) -> Iterator[Any]:
        """One batch's records: `decode_batch`, or kafka-python's own iteration when it does not take the batch."""
        decoded = decode_batch(batch, tp.topic, tp.partition, self.leader_epoch)
        if decoded is None:
            yield from self._reference_records(tp, batch)
        elif decoded[0]:
            self._ready, self._sizes = decoded
            self._at = 0
            yield _READY  # take() serves them and resumes here once they are all taken

    def _reference_records(self, tp: Any, batch: Any) -> Iterator[ConsumerRecord]:
        """kafka-python's per-record loop (no deserialisers)."""
        for record in batch:
            if self.check_crcs and not record.validate_crc():
                raise CorruptRecordError("Record for partition %s at offset %s failed crc check" % (
                    self.topic_partition, record.offset))
            key, value, headers = record.key, record.value, record.headers
            header_size = sum(len(h_key.encode("utf-8")) + (len(h_val) if h_val is not None else 0)
                              for h_key, h_val in headers) if headers else -1
            self.records_read += 1
            self.bytes_read += record.size_in_bytes
            self.next_fetch_offset = record.offset + 1
            yield ConsumerRecord(tp.topic, tp.partition, self.leader_epoch, record.offset, record.timestamp,
                                 record.timestamp_type, key, value, record.headers, record.checksum,
                                 len(key) if key is not None else -1, len(value) if value is not None else -1,
                                 header_size)


def speed_up(consumer: Any) -> bool:
    """Unpack this client's fetched records with FastPartitionRecords (on a tested kafka-python only); whether it
    is installed."""
    fetcher = getattr(consumer, "_fetcher", None)
    if kafka.__version__ not in TESTED_VERSIONS or fetcher is None:
        log.debug("kafka-python %s: fetched records are unpacked by kafka-python itself", kafka.__version__)
        return False
    fetcher.PartitionRecords = FastPartitionRecords
    restore_resumed(fetcher)
    return True


def restore_resumed(fetcher: Any) -> None:
    """Mend kafka-python 3.0.12's restore of records parked for a paused partition (KAFKA-7548): they come back
    only while no PartitionRecords is in line, but a drained one stays in line until the next fetch response is
    parsed, and a partition with parked records is never fetched. A partition paused with records in line (driftline
    pauses every newly assigned partition until it is positioned, and one whose position is checked again) and
    resumed while the others had nothing new was never read again (seen: one partition stuck at offset 0 after a
    broker reset, the rest consumed). A drained PartitionRecords holds nothing: it is cleared before each drain.

    So is one whose record walk raised once its error was given out: kafka-python keeps it in line, its take()
    returns nothing and fetched_records() looped on it for good inside poll() (SRE tryout: a producer's lz4 batch,
    no lz4 library: `run` at 70 % CPU, deaf to SIGTERM, /readyz "kafka ok"). Cleared, the partition is fetched
    again from its position and the error is raised at each poll, as for a batch that fails at once."""
    original = getattr(fetcher, "fetched_records", None)
    if original is None:
        return

    def fetched_records(*args: Any, **kwargs: Any) -> Any:
        current = fetcher._next_partition_records
        if current is not None and (not current or (getattr(current, "failed", False)
                                                    and current._next_inline_exception is None)):
            fetcher._next_partition_records = None
        return original(*args, **kwargs)

    fetcher.fetched_records = fetched_records
