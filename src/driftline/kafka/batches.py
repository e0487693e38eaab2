"""What goes into one stored batch: polls gathered for a short linger time, then only records at or after each
partition's expected offset (older ones are re-deliveries after a seek)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from bisect import bisect_left
from itertools import accumulate, repeat
from operator import attrgetter
from typing import Any

from kafka import TopicPartition

from ..config_service import BATCH_BYTES
from ..ingest.keys import NULL_KEY
from ..ingest.pipeline import RawRecord

Batch = dict[TopicPartition, list[Any]]
"""Polled records per partition (kafka-python ConsumerRecords: .offset, .value)."""

log = logging.getLogger(__name__)


def fill(poll: Callable[..., Batch], polled: Batch, limit: int, linger_s: float, stop: threading.Event,
         rebalancing: Callable[[], bool], monotonic: Callable[[], float], since: float | None = None,
         max_bytes: int = BATCH_BYTES, backlog: Callable[[Batch], bool] | None = None) -> tuple[Batch, Batch]:
    """(the batch, the records left for the next one). Keep polling for up to `linger_s` after the first records
    (polled at `since`, default now), until `limit` records or `max_bytes` payload bytes: a busy stream is then
    stored in few large transactions (each costs a read-modify-write of every bucket it touches). Records carried
    from the previous store have often waited longer than that already: they are stored at once instead of
    lingering again. Stops at once on a rebalance, on stop, or when a poll brings nothing. The batch ends at the
    record that brings it to `max_bytes` (`cut`); what a poll brought past it is the second part. Records carried
    beyond `limit` (a batch shared out with the partitions not read yet, unread.py) are cut at `limit` as well.

    No linger when `backlog(polled)`: records already wait in the log past those polled, so lingering would only
    hold the store back for a fetch round trip, while the records polled during the store (overlap.py) make the
    next batch anyway (run_process_bench: the first batch of a backlog waited 25-40 ms for one more fetch)."""
    count = sum(len(r) for r in polled.values())
    if not count:
        return polled, {}
    if count > limit:  # records carried beyond a batch shared out (unread.py), more than a poll brings
        return cut(polled, max_bytes, limit)
    size = payload_bytes(polled)
    if size < max_bytes and (linger_s <= 0 or count >= limit or (backlog is not None and backlog(polled))):
        return polled, {}  # nothing to wait for nor to cut (cut would keep every record)
    batch: Batch = {tp: list(recs) for tp, recs in polled.items()}
    deadline = (monotonic() if since is None else since) + linger_s
    while linger_s > 0 and count < limit and size < max_bytes and not stop.is_set() and not rebalancing():
        left = deadline - monotonic()
        if left <= 0:
            break
        more = poll(timeout_ms=max(1, int(left * 1000)), max_records=limit - count)
        if not more:
            break
        for tp, recs in more.items():
            batch.setdefault(tp, []).extend(recs)
            count += len(recs)
        size += payload_bytes(more)
    return cut(batch, max_bytes)


def backlog_waiting(polled: Batch, highwater: Callable[[Any], int | None]) -> bool:
    """Whether a polled partition's log holds records past the last one polled (its fetched high-water mark, None:
    unknown, no backlog): a backlog being read, not a live stream waiting for its next records."""
    for tp, recs in polled.items():
        if recs:
            end = highwater(tp)
            if end is not None and end > recs[-1].offset + 1:
                return True
    return False


def sizes(recs: Sequence[Any]) -> list[int]:
    """Each record's payload bytes (0 for a null value)."""
    try:
        return list(map(len, map(_VALUE, recs)))
    except TypeError:  # a tombstone among them
        return [0 if r.value is None else len(r.value) for r in recs]


def payload_bytes(batch: Batch) -> int:
    """Payload bytes of every record of a batch: the measure of `kafka.batch_max_bytes` (as `replay` measures
    lines)."""
    return sum(sum(sizes(recs)) for recs in batch.values())


def cut(batch: Batch, max_bytes: int, limit: int | None = None) -> tuple[Batch, Batch]:
    """(records up to and including the one that brings the payload bytes to `max_bytes`, and at most `limit`
    records, the rest): partitions in their order, each one's records in theirs; at least one record, so a single
    event past the bound still progresses. The rule `replay` cuts its batches by (`limit`: `fill` of a carry larger
    than a batch)."""
    kept: Batch = {}
    rest: Batch = {}
    size = count = 0
    for tp, recs in batch.items():
        if size >= max_bytes or (limit is not None and count >= limit):
            rest[tp] = recs
            continue
        ends = list(accumulate(sizes(recs), initial=size))[1:]  # bytes up to and including each record
        take = bisect_left(ends, max_bytes) + 1  # up to the first record that brings the batch to the bound
        if limit is not None:
            take = min(take, limit - count)
        if take >= len(recs):
            kept[tp] = recs
            size = ends[-1] if ends else size
            count += len(recs)
            continue
        kept[tp], rest[tp] = recs[:take], recs[take:]
        size, count = ends[take - 1], count + take  # at the bound of one or the other: the rest waits
    return kept, rest


def fresh_records(polled: Batch, expected: dict[TopicPartition, int], pending: set[TopicPartition]) -> Batch:
    """Records of positioned partitions at or after the expected offset (older ones are re-deliveries)."""
    batch: Batch = {}
    for tp, recs in polled.items():
        start = expected.get(tp)
        if start is None or tp in pending or not recs:
            continue
        if recs[0].offset < start:
            recs = [r for r in recs if r.offset >= start]
            if not recs:
                continue
        if recs[0].offset > start:
            log.debug("%s[%d]: offsets %d..%d absent (retention, compaction or control records)",
                      tp.topic, tp.partition, start, recs[0].offset - 1)
        batch[tp] = recs
    return batch


_OFFSET, _VALUE, _KEY = attrgetter("offset"), attrgetter("value"), attrgetter("key")


def _all_of(items: list[Any], kind: type) -> bool:
    """Every item is exactly of type `kind` (one C-level pass; subclasses and None do not qualify)."""
    return not items or set(map(type, items)) == {kind}


def at_or_after(recs: list[Any], start: int) -> list[Any]:
    """Records at or after offset `start`, in their order: `[r for r in recs if r.offset >= start]` (that reference
    whenever the offsets are not all plain ints); a run that is wholly at or after `start` comes back as it is."""
    offsets = list(map(_OFFSET, recs))
    if offsets and type(recs) is list and _all_of(offsets, int) and min(offsets) >= start:
        return recs
    return [r for r in recs if r.offset >= start]


def record_key(rec: Any) -> bytes:
    """A record's key for the co-partitioning check (NULL_KEY when null, b"" when empty: they differ)."""
    key = getattr(rec, "key", None)
    return key if isinstance(key, bytes) else NULL_KEY if key is None else str(key).encode()


def raw_records(recs: Sequence[Any], source: str, partition: int, kind: str) -> list[RawRecord]:
    """The RawRecords of one partition's records (payload b"" for a null value, key by `record_key`).

    Built with one C-level call when every value and key is plain bytes; otherwise record by record (the
    reference), so tombstones, null keys and odd record types give exactly what they always did."""
    try:
        values, keys = list(map(_VALUE, recs)), list(map(_KEY, recs))
    except AttributeError:
        values = keys = []
    if len(values) == len(recs) and _all_of(values, bytes) and _all_of(keys, bytes):
        n = len(recs)
        return list(map(RawRecord, repeat(source, n), repeat(partition, n), map(_OFFSET, recs), values,
                        repeat(kind, n), keys))
    return [RawRecord(source, partition, r.offset, r.value if r.value is not None else b"", kind, record_key(r))
            for r in recs]
