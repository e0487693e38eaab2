"""Storing a batch while the next one is polled: the database transaction (sqlite3 and psycopg release the GIL
while the database works) runs in one worker thread and the main thread keeps calling poll() (kafka-python parses
fetched records there) until it is done. Everything else stays on the main thread, in the order it always had:
the records polled meanwhile are only *carried* to the next step, which filters them by the positions the finished
batch left, applies rebalances first and stores nothing while a batch is held."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any, TypeVar

from kafka.errors import KafkaError

from ..config_service import BATCH_BYTES
from .batches import Batch, payload_bytes

T = TypeVar("T")

POLL_S = 0.05
"""While a batch is stored, what has been fetched is taken every 50 ms (poll without waiting): the batch's result
is taken as soon as it is done, and a trickle of records is not parsed in many tiny polls that contend for the GIL
with the transaction."""


class Overlap:
    """One worker thread for store transactions, and the records (or poll error) gathered while one ran."""

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._pool: ThreadPoolExecutor | None = None
        self.monotonic = monotonic
        self.carry: Batch = {}
        """Records polled while the previous batch was stored, for the next step (in poll order per partition)."""
        self.carried_at: float | None = None
        """When the first carried records were polled (monotonic): the next batch's linger counts from then."""
        self.error: KafkaError | None = None
        """A poll error met while storing, raised again at the next step's poll (so it is handled as ever)."""

    def keep(self, rest: Batch, since: float) -> None:
        """Carry records a batch was cut before (batches.cut) to the next step, ahead of any polled later; `since`:
        when they were polled (the next batch does not linger for them again)."""
        if any(rest.values()):
            self.carry = {tp: list(recs) for tp, recs in rest.items() if recs}
            self.carried_at = since

    def store(self, work: Callable[[], T], poll: Callable[..., Batch], limit: int, keep_polling: Callable[[], bool],
              seek: Callable[[Any, int], None], max_bytes: int = BATCH_BYTES) -> tuple[T, float]:
        """Run `work` in the worker thread, polling up to `limit` records or `max_bytes` payload bytes meanwhile
        (counting the records already carried) while `keep_polling()`; (its result, its own duration in seconds).
        Its exception is raised here, after polling stopped.

        On a poll error the carried records are given back (each partition sought to its first carried offset)
        and the error is kept for the next step."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="driftline-store")
        future: Future[tuple[T, float]] = self._pool.submit(_timed, work)
        try:
            self._poll_until(future, poll, limit, max_bytes, keep_polling, seek)
        except BaseException:
            wait([future])  # never leave a transaction running behind an unexpected error
            raise
        return future.result()

    def _poll_until(self, future: Future[Any], poll: Callable[..., Batch], limit: int, max_bytes: int,
                    keep_polling: Callable[[], bool], seek: Callable[[Any, int], None]) -> None:
        count, size = sum(map(len, self.carry.values())), payload_bytes(self.carry)
        while count < limit and size < max_bytes and keep_polling():
            if wait([future], timeout=POLL_S).done:
                return
            try:
                more = poll(timeout_ms=0, max_records=limit - count)
            except KafkaError as err:
                self.error = err
                for tp, recs in self.carry.items():
                    try:
                        seek(tp, recs[0].offset)
                    except (KafkaError, AssertionError):  # no longer assigned: nothing to give back
                        pass
                self.carry, self.carried_at = {}, None
                return
            if count == 0 and any(more.values()):
                self.carried_at = self.monotonic()
            for tp, recs in more.items():
                if recs:
                    self.carry.setdefault(tp, []).extend(recs)
                    count += len(recs)
            size += payload_bytes(more)

    def lingering(self, poll: Callable[..., Batch]) -> Callable[..., Batch]:
        """`poll` for the polls a batch makes while it lingers (batches.fill): an error ends the linger with nothing
        more, so the records already polled are stored, and is kept for the next step's poll (handled as ever).
        Raised through fill, it dropped them, while kafka-python's fetch position had passed them: a producer's lz4
        batch behind three plain and three gzip records (no lz4 library) lost those six records, the stored position
        being moved over them as over records holding nothing (upkeep's _pass_records_not_stored)."""
        def poll_kept(**kwargs: Any) -> Batch:
            try:
                return poll(**kwargs)
            except KafkaError as err:
                self.error = err
                return {}
        return poll_kept

    def take(self) -> tuple[Batch, KafkaError | None]:
        """(carried records, kept poll error), and forget both (and `carried_at`)."""
        carry, error, self.carry, self.error, self.carried_at = self.carry, self.error, {}, None, None
        return carry, error

    def close(self) -> None:
        """Stop the worker thread (a running transaction finishes first)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


def _timed(work: Callable[[], T]) -> tuple[T, float]:
    t0 = time.perf_counter()
    result = work()
    return result, time.perf_counter() - t0
