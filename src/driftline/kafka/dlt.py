"""Copies of dead letters on the optional `kafka.dead_letter_topic`; the database copy is authoritative.

Each copy is bounded (`kafka.dead_letter_max_bytes`; a cut payload carries an `original_size` header) and sent
on its own: a send error is counted and logged, never raised. Per partition the database keeps a watermark
(meta `dlt:<source>:<partition>`: every dead letter below this offset is on the topic); letters above it — a
failed send, or a crash between the state transaction and the send — are re-sent from the database when the
partition is (re)assigned and every `retry_every_s` while some are missing. A copy can therefore be repeated
(at least once), never lost while the database row exists.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import and_, select

from ..core.events import DeadLetter
from ..storage import schema as t
from ..storage.errors import StoreUnavailable
from ..storage.store import Store
from ..streak import FailureStreak, first_line
from .signals import KafkaSignals

log = logging.getLogger(__name__)

Key = tuple[str, int]
"""(source, partition)."""


def bounded(value: bytes, limit: int) -> tuple[bytes, int | None]:
    """(payload cut to `limit` bytes, original size when cut else None)."""
    return (value, None) if len(value) <= limit else (value[:limit], len(value))


class DeadLetterSink:
    """Sends dead letters with reason/detail/topic/partition/offset headers, one future per letter.

    The producer is opened by `open_producer` when first needed, and opened afresh after a send in which no copy
    arrived: kafka-python's idempotent producer does not recover from a broker reset (OutOfOrderSequenceNumber,
    then InitProducerId errors on every later send, while a new producer sends at once), nor does one that could
    not reach the broker at start.

    Failures are logged per send, not per letter, through a `FailureStreak`: a topic that refuses every copy (no
    write ACL, a schema-validated topic, a broker's smaller message.max.bytes) logged one warning per dead letter,
    and again for each at every re-send from the database (30 s)."""

    def __init__(self, open_producer: Callable[[], Any], topic: str, max_bytes: int, sig: KafkaSignals,
                 flush_timeout_s: float = 10.0, streak: FailureStreak | None = None) -> None:
        self.open_producer, self.topic, self.max_bytes, self.sig = open_producer, topic, max_bytes, sig
        self.flush_timeout_s = flush_timeout_s
        self.producer: Any = None
        self.opened = 0
        """Producers opened so far (a second one means the first was given up)."""
        self.streak = streak if streak is not None else FailureStreak(f"dead-letter topic {topic}: sending copies",
                                                                      log)
        self._failures: list[tuple[DeadLetter, BaseException]] = []
        """Copies of the current send that were not sent, with why."""

    def connect(self) -> Any:
        """The producer, opened if needed; None (counted, logged) when it cannot be opened now."""
        if self.producer is None:
            try:
                self.producer = self.open_producer()
                self.opened += 1
            except Exception as err:  # noqa: BLE001 - NoBrokersAvailable, KafkaTimeoutError, …: retried later
                self.sig.dlt_failed.labels(error=type(err).__name__).inc()
                self.streak.failed(RuntimeError(f"the producer cannot be opened ({first_line(err)}); copies stay in "
                                                "the database and are re-sent later"))
        return self.producer

    def _renew(self) -> None:
        """Give up the producer (nothing it held arrived): the next send opens a new one."""
        old, self.producer = self.producer, None
        log.info("dead-letter topic %s: no copy arrived; opening a new producer for the next send", self.topic)
        try:
            old.close(timeout=0)
        except Exception as err:  # noqa: BLE001 - a broken producer may fail to close
            log.debug("dead-letter producer close: %s", err)

    def _send_one(self, d: DeadLetter, value: bytes, from_db: bool) -> Any | None:
        """Queue one letter; a synchronous refusal (too large for the producer, no metadata) is counted."""
        value, original = bounded(value, self.max_bytes)
        topic = d.source.split(":", 1)[1] if d.source.startswith("kafka:") else d.source
        headers = [("reason", d.reason.encode()), ("detail", d.detail.encode()[:1000]),
                   ("topic", topic.encode()), ("partition", str(d.partition).encode()),
                   ("offset", str(d.offset).encode())]
        if from_db:
            headers.append(("copy", b"database"))  # re-sent from the database: the payload's first 4 KiB
        if original is not None:
            headers.append(("original_size", str(original).encode()))
            self.sig.dlt_truncated.inc()
        try:
            return self.producer.send(self.topic, value=value, headers=headers)
        except Exception as err:  # noqa: BLE001 - MessageSizeTooLargeError, KafkaTimeoutError, …: never fatal
            if not (len(value) > len(d.raw) and d.raw):
                self._failed(d, err)
                return None
            self.sig.dlt_failed.labels(error=type(err).__name__).inc()  # a smaller copy (first 4 KiB) may pass
            try:
                return self.producer.send(self.topic, value=d.raw, headers=headers + [
                    ("original_size", str(original or len(value)).encode())])
            except Exception as err2:  # noqa: BLE001
                self._failed(d, err2)
            return None

    def _failed(self, d: DeadLetter, err: BaseException) -> None:
        self.sig.dlt_failed.labels(error=type(err).__name__).inc()
        self._failures.append((d, err))

    def _report(self, sent: int) -> None:
        """One line for the copies of this send that were not sent (the streak decides whether it is logged)."""
        failures, self._failures = self._failures, []
        if not failures:
            return
        d, err = failures[0]
        kinds: dict[str, int] = {}
        for _, e in failures:
            kinds[type(e).__name__] = kinds.get(type(e).__name__, 0) + 1
        why = ", ".join(f"{k} ×{n}" for k, n in kinds.items())
        self.streak.failed(RuntimeError(
            f"{len(failures)} of {sent} copies not sent ({why}; the first, of {d.source}[{d.partition}]@{d.offset} "
            f"({d.reason}): {first_line(err)}); the database keeps them and they are re-sent later"))

    def send(self, letters: Sequence[DeadLetter], payloads: dict[tuple[str, int, int], bytes]) -> list[bool]:
        """Send each letter (its full original payload when known, bounded), flush, and say which arrived."""
        if not letters:
            return []
        if self.connect() is None:
            return [False] * len(letters)
        futures = [self._send_one(d, payloads.get((d.source, d.partition, d.offset), d.raw), not payloads)
                   for d in letters]
        if any(f is not None for f in futures):
            try:
                self.producer.flush(timeout=self.flush_timeout_s)
            except Exception as err:  # noqa: BLE001 - KafkaTimeoutError: unconfirmed ones count as not sent
                log.debug("dead-letter topic %s: flush not complete (%s)", self.topic, err)
        out = []
        for d, f in zip(letters, futures):
            ok = f is not None and f.is_done and f.succeeded()
            if f is not None and f.is_done and not ok:
                self._failed(d, f.exception or RuntimeError("delivery failed"))
            elif f is not None and not f.is_done:
                self.sig.dlt_failed.labels(error="Timeout").inc()
                self._failures.append((d, TimeoutError(f"not confirmed within {self.flush_timeout_s:.0f}s")))
            if ok:
                self.sig.dlt_sent.inc()
            out.append(ok)
        self._report(len(letters))
        if all(out):
            self.streak.succeeded()
        if not any(out):
            self._renew()
        return out

    def close(self) -> None:
        if self.producer is None:
            return
        try:
            self.producer.close(timeout=5)
        except Exception as err:  # noqa: BLE001 - closing on shutdown
            log.warning("dead-letter producer close: %s", err)


def watermark_key(source: str, partition: int) -> str:
    return f"dlt:{source}:{partition}"


class DeadLetterCopies:
    """Per-partition watermarks of what is on the topic, and re-sends of what is missing, from the database."""

    def __init__(self, sink: DeadLetterSink, store: Store, monotonic: Callable[[], float],
                 retry_every_s: float = 30.0) -> None:
        self.sink, self.store, self.monotonic, self.retry_every_s = sink, store, monotonic, retry_every_s
        self.done: dict[Key, int] = {}
        """Every dead letter of the partition below this offset is on the topic (as persisted)."""
        self.next_retry = 0.0

    def adopt(self, key: Key, stored: int) -> None:
        """A partition assigned at stored position `stored`: load its watermark (a partition never seen starts
        at `stored`: older letters predate the topic) and re-send what is missing."""
        raw = self.store.meta(watermark_key(*key))
        if raw is None:
            self.store.set_meta(watermark_key(*key), str(stored))
            self.done[key] = stored
        elif int(raw) > stored:  # the position was reset below it (kafka.on_offset_reset): a new log
            self.store.set_meta(watermark_key(*key), str(stored))
            self.done[key] = stored
        else:
            self.done[key] = int(raw)
            self.catch_up(key, stored)

    def close(self) -> None:
        """Close the producer (queued copies get a few seconds; unconfirmed ones are re-sent from the database)."""
        self.sink.close()

    def forget(self, key: Key) -> None:
        self.done.pop(key, None)

    def after_batch(self, letters: Sequence[DeadLetter], payloads: dict[tuple[str, int, int], bytes],
                    reached: dict[Key, tuple[int, int]]) -> None:
        """After a stored batch ((source, partition) → (start, next offset)): send its letters and move each
        partition's watermark over the batch when nothing before it is missing and all its letters arrived."""
        arrived = self.sink.send(letters, payloads) if letters else []
        first_missing: dict[Key, int] = {}
        for d, ok in zip(letters, arrived):
            k = (d.source, d.partition)
            if not ok:
                first_missing[k] = min(d.offset, first_missing.get(k, d.offset))
        for k, (start, end) in reached.items():
            if k not in self.done or self.done[k] < start:
                continue  # a backlog: catch_up moves this watermark
            new = first_missing.get(k, end)
            if any(d.source == k[0] and d.partition == k[1] for d in letters) or new != end:
                self._persist(k, new)
            else:
                self.done[k] = new  # no letter in the batch: the persisted watermark may lag (catch_up skips)

    def _persist(self, key: Key, offset: int) -> None:
        try:
            self.store.set_meta(watermark_key(*key), str(offset))
            self.done[key] = offset
        except StoreUnavailable as err:
            log.warning("dead-letter watermark of %s[%d] not stored (%s); letters may be re-sent", *key, err)

    def maybe_retry(self, positions: dict[Key, int]) -> None:
        """Every retry_every_s: re-send missing copies of owned partitions (`positions`: stored next offsets)."""
        now = self.monotonic()
        if now < self.next_retry:
            return
        self.next_retry = now + self.retry_every_s
        for key, upto in positions.items():
            if key in self.done and self.done[key] < upto:
                try:
                    self.catch_up(key, upto)
                except StoreUnavailable as err:
                    log.warning("dead-letter re-send skipped: database unavailable: %s", err)
                    return

    def catch_up(self, key: Key, upto: int) -> None:
        """Re-send the database's letters of `key` in [watermark, upto) and move the watermark."""
        start = self.done.get(key, upto)
        if start >= upto:
            return
        d = t.dead_letters.c
        q = (select(d.reason, d.detail, d.source, d.partition, d.offset, d.raw)
             .where(and_(d.source == key[0], d.partition == key[1], d.offset >= start, d.offset < upto))
             .order_by(d.offset))
        with self.store.read() as conn:
            letters = [DeadLetter(r.reason, r.detail, r.source, r.partition, r.offset, bytes(r.raw))
                       for r in conn.execute(q)]
        if letters:
            log.info("dead-letter topic %s: re-sending %d copies of %s[%d] from the database (offsets %d..%d)",
                     self.sink.topic, len(letters), key[0], key[1], start, upto - 1)
        arrived = self.sink.send(letters, {})
        missing = [x.offset for x, ok in zip(letters, arrived) if not ok]
        self._persist(key, min(missing) if missing else upto)
