"""The live consumer: poll → decode → engine → one store transaction (state + positions, fenced) → Kafka commit.

The database is the source of truth: on every assignment the consumer checks the positions stored with the
state against the log (assignment.py, resets.py: kafka.on_offset_reset) and seeks to them, and Kafka offsets are committed only after the transaction (advisory, for tools that read them). A batch
is stored only if each partition's stored position still equals where the batch was read from, so a consumer that
lost its partitions (evicted, slow) cannot double-count. Broker away: kafka-python reconnects by itself, the
consumer reports not-ready. Database away: consuming pauses, the batch is kept and retried with backoff.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from operator import attrgetter
from typing import Any

from kafka import OffsetAndMetadata, TopicPartition
from kafka.errors import KafkaError, NoOffsetForPartitionError, OffsetOutOfRangeError
from sqlalchemy.exc import DataError

from . import partition_ops
from ..gc_tuning import ByteCollector
from ..ops import OpsMetrics
from ..ingest.pipeline import Pipeline, RawRecord
from ..ingest.stored_now import KeyLog
from ..core.events import iso
from ..storage import ceilings
from ..storage.errors import StalePositions, StoreUnavailable
from ..streak import FailureStreak
from .alignment import Aligning, Alignment
from .batches import Batch, at_or_after, backlog_waiting, fill, fresh_records, raw_records
from .connect import open_consumer, open_dead_letter_sink
from .topic_watch import TopicWatch
from .topics import open_admin
from .decode import speed_up
from .assignment import Ownership, fmt, source_of
from .db_health import LOCK_PATIENCE_S, DatabaseHealth
from .refusals import Refusals
from .upkeep import Upkeep, maintenance_streak
from .dlt import DeadLetterCopies
from .faults import Faults
from .group_db import GroupWatch, wait_for_database_id
from .handoff import Handoff
from .overlap import Overlap
from .health import Backoff, ConsumerStatus, StallWatch, consumed_counter, rebalancing
from .loss import EndsSeen
from .log_ids import REFRESH_TIMEOUT_MS, SideIds, TopicIds, current_ids
from .loop_gap import BehindCheck, LoopGap
from .readiness import consumer_readiness
from .resets import records_exist as records_exist_in
from .settings import KafkaSettings
from .signals import signals, zero_series

log = logging.getLogger(__name__)
_PAYLOAD = attrgetter("payload")


class LiveConsumer(Ownership, Refusals, Upkeep, DatabaseHealth, Aligning):
    """One consumer-group member; `run()` blocks until `stop` is set, then closes cleanly."""

    def __init__(self, pipeline: Pipeline, settings: KafkaSettings, stop: threading.Event, *,
                 ops: OpsMetrics | None = None, faults: Faults | None = None, poll_ms: int = 500,
                 maintain_every_s: float = 30.0, connect_backoff: Backoff | None = None,
                 db_backoff: Backoff | None = None, monotonic: Callable[[], float] = time.monotonic,
                 records_exist: Callable[[dict[TopicPartition, int]], set[TopicPartition]] | None = None,
                 topic_ids: Callable[[set[str], bool], TopicIds] | None = None) -> None:
        self.pipeline, self.settings, self.stop = pipeline, settings, stop
        self.ops = ops if ops is not None else OpsMetrics()
        self.faults = faults or Faults()
        self.faults.wrap_store(pipeline.store)
        self.poll_ms, self.maintain_every_s, self.monotonic = poll_ms, maintain_every_s, monotonic
        self.connect_backoff = connect_backoff or Backoff(1.0, 15.0)
        self.db_backoff = db_backoff or Backoff(0.5, 5.0)
        self.status = ConsumerStatus()
        self.consumer: Any = None
        self.handoff: Handoff | None = None
        self.dlt: DeadLetterCopies | None = None
        self.sig = signals(self.ops)
        zero_series(self.sig, settings.topics, settings.on_offset_reset, settings.on_key_mismatch)
        self.records_exist = records_exist or (lambda wanted: records_exist_in(settings, wanted))
        """Which partitions still hold a record at an offset (confirms a position beyond the reported end)."""
        self.side_ids: SideIds | None = None
        """Topic ids asked on a connection of their own, not behind the consumer's parked fetch (log_ids.py);
        opened by connect() (a consumer given to attach() alone is asked itself)."""
        self.topic_ids = topic_ids or (lambda topics, refresh: current_ids(self.consumer, topics, refresh,
                                                                           self.side_ids))
        """topic → its id now (refresh: asked from the broker first); see log_ids.py."""
        self.log_ids: dict[TopicPartition, str | None] = {}
        """The topic id each positioned partition resumed under."""
        self.unresolved: dict[TopicPartition, str] = {}
        """Partitions stopped by an offset-reset problem under policy `fail` → what is wrong."""
        self.unowned_since: float | None = monotonic()
        self.next_lag = 0.0
        self.all_lags: dict[tuple[str, int], int] = {}
        self.log_ends: dict[TopicPartition, int] = {}
        self.ends = EndsSeen()
        self.owned: set[TopicPartition] = set()
        self.pending: set[TopicPartition] = set()
        self.expected: dict[TopicPartition, int] = {}
        self.held: Batch | None = None
        self.align = Alignment(pipeline.config.align_within_s)
        """Event-time alignment of the partitions (alignment.py: a backlog longer than labels.horizon)."""
        self.db_retry_at = 0.0
        self.db_down_since: float | None = None
        self.db_failed = ""
        self.lock_patience_s = LOCK_PATIENCE_S
        self.broker_down_since: float | None = None
        self.kafka_outage = FailureStreak("Kafka", log, monotonic=monotonic)
        """A Kafka outage continued by the connect retries of a rebuilt client: reminders only (connect.py)."""
        self.expiring, self.maintain_failing, self.orphans = False, maintenance_streak(monotonic), []
        pipeline.stored_now = KeyLog()  # the predictions stored since the last maintenance pass (Upkeep.maintain)
        self.rebalance_seen_at = -math.inf
        self.loop_gap, self.behind_check = LoopGap(), BehindCheck()  # upkeep.py: a stopped process, stale highwaters
        self.member, self.next_beat, self.beat_stored = ceilings.member_id(), 0.0, False  # upkeep.Upkeep._beat
        self.beat_owned: set[TopicPartition] = set()
        self.pending_since: float | None = None
        self.next_housekeeping = 0.0
        self.next_maintain = monotonic() + maintain_every_s
        self.stored_batches = 0
        self.consumed = consumed_counter(self.ops)
        self.stall = StallWatch(settings.stall_restart_s)
        self.topic_watch = TopicWatch(settings.topics, settings.bootstrap, log, monotonic)
        """Subscribed topics the broker lost (topic_watch.py)."""
        self.resubscribe_due = False
        self.overlap = Overlap(monotonic)
        self.collector = ByteCollector(settings.batch_max_bytes)
        """Cyclic garbage can hold whole batches: collected per stored bytes (gc_tuning.ByteCollector)."""
        self.group = GroupWatch(settings.group_id, self.sig.group_databases)
        """Whether the group's members write to other databases than this one (group_db.py)."""
        self.database: tuple[str, float] | None = None
        """(this database's id, when it joined the group), read at the first connect (group_db.py)."""
        self.sig.group_databases.set(1)
        self.sig.kafka_up.set_function(lambda: 0.0 if self.status.kafka_problem(self.monotonic()) else 1.0)

    # --- readiness ------------------------------------------------------------------------------
    def ready(self) -> tuple[bool, str]:
        """(ready, reason) for /readyz (readiness.py)."""
        return consumer_readiness(self)

    # --- connection -----------------------------------------------------------------------------
    def connect(self) -> bool:
        """Check the topics, build the consumer and subscribe, retrying with backoff; False when stopped first.

        Raises TopicsError (missing or not co-partitioned topics) and ConfigError (settings kafka-python rejects).
        """
        self.status.phase = "connecting"
        if self.database is None:
            got = wait_for_database_id(self.pipeline.store, self.stop, self.db_backoff, self.settings.group_id,
                                       [source_of(topic) for topic in self.settings.topics])
            if got is None:
                return False
            self.database = got
            log.info("database id %s, in group %s since %s (sent to the consumer group: the partitions stay with the "
                     "database that joined it first)", got[0], self.settings.group_id, iso(got[1]))
        outage = None if self.broker_down_since is None else self.kafka_outage  # a client rebuilt during one
        if outage is not None:
            outage.resume(self.broker_down_since)
        consumer = open_consumer(self.settings, self.stop, self.connect_backoff, self.status,
                                 self.group.assignor_for(*self.database), outage)
        if consumer is None:
            return False
        self.attach(consumer)
        if self.side_ids is None:
            self.side_ids = SideIds(lambda: open_admin(self.settings, REFRESH_TIMEOUT_MS), self.monotonic,
                                    isolation_level=str(self.settings.consumer_kwargs()["isolation_level"]))
        consumer.subscribe(list(self.settings.topics), listener=self.handoff)
        sink = open_dead_letter_sink(self.settings, self.sig)
        self.dlt = None if sink is None else DeadLetterCopies(sink, self.pipeline.store, self.monotonic)
        return True

    def attach(self, consumer: Any) -> Handoff:
        """Use this (subscribed or about to be) consumer; returns the rebalance listener to subscribe with."""
        self.consumer = consumer
        back, self.resubscribe_due = self.topic_watch.reset(), False  # a new client subscribes afresh anyway
        if back:
            log.warning("%s", back)
        speed_up(consumer)
        self.handoff = Handoff(consumer.pause, self._rebalance_event)
        self.status = ConsumerStatus(phase="consuming", broker_ok=True)
        return self.handoff

    def _rebalance_event(self, kind: str, tps: set[TopicPartition]) -> None:
        """Runs on kafka-python's IO thread inside poll(): log and the crash-test hook only."""
        log.info("partitions %s: %s", "revoked" if kind == "revoke" else "assigned", fmt(tps))
        self.faults.hit(kind)

    # --- main loop ------------------------------------------------------------------------------
    def run(self) -> None:
        """Connect, consume until `stop`, close (finishing or abandoning the current batch)."""
        if not self.owned:  # "no partition assigned for 46s" counted from the start, not from a wait for the database
            self.unowned_since = self.monotonic()
        if self.consumer is None and not self.connect():
            return
        try:
            while not self.stop.is_set():
                self.step()
                self.collector.collect_if_due()
        finally:
            self.close()

    def step(self) -> None:
        """One iteration: poll, apply rebalances, position new partitions, store a batch, housekeeping."""
        c = self.consumer
        carried_at = self.overlap.carried_at
        carried, error = self.overlap.take()
        try:
            if error is not None:
                raise error
            polled = carried or c.poll(timeout_ms=self.poll_ms, max_records=self.settings.batch_max_records)
            self.status.polls.succeeded()
            if self.held is None and self.handoff is not None:
                since = carried_at if carried and carried_at is not None else self.monotonic()
                polled, rest = fill(self.overlap.lingering(c.poll), polled, self.settings.batch_max_records,
                                    self.settings.batch_linger_ms / 1000.0, self.stop, self.handoff.pending,
                                    self.monotonic, since, self.settings.batch_max_bytes,
                                    lambda got: backlog_waiting(got, lambda tp: partition_ops.highwater(c, tp)))
                self.overlap.keep(rest, since)  # cut at kafka.batch_max_bytes: the rest starts the next batch
        except NoOffsetForPartitionError as err:  # new partitions, paused until seeked to the stored positions
            log.debug("poll before positioning: %s", err)
            polled = {}
        except KafkaError as err:
            self.status.polls.failed(err)
            polled = {}
            if isinstance(err, OffsetOutOfRangeError) and err.args and isinstance(err.args[0], dict):
                self._recheck(set(err.args[0]), "a fetch was out of range")
            else:
                self.stop.wait(0.5)
        self._apply_handoff()
        self.group.check()
        if carried and self.pending:  # records polled before a partition was (re)assigned, fenced or rechecked
            polled = {tp: recs for tp, recs in polled.items() if tp not in self.pending}  # positioning seeks it
        now = self.monotonic()
        joining = rebalancing(c)  # no lock wait now: it would hold up the group's rebalance and this member's rejoin
        if self.held is not None:
            if now >= self.db_retry_at and not joining:
                self._store(self.held)
        else:
            if self.pending and now >= self.db_retry_at:
                self._position_pending()
            if not joining:
                self._db_check_writable()  # a failed write that nothing retries (its batch revoked)
            batch = fresh_records(polled, self.expected, self.pending)
            if batch:
                self._store(batch)
        if self.monotonic() >= self.next_housekeeping:  # the clock again: a batch may have waited for the lock
            self._housekeeping()

    def _store(self, batch: Batch) -> None:
        """One fenced transaction for the batch; then dead-letter copies and the advisory Kafka commit."""
        if self.held is None:  # partitions not read yet are read first, or all is given back: {} (unread.py)
            batch = self._read_unread(batch, self.pipeline.clock())
        self._check_log_ids(batch)  # a replaced log's partitions are rechecked: their records dropped below
        batch = {tp: at_or_after(recs, self.expected[tp]) for tp, recs in batch.items()
                 if tp in self.expected}  # never re-store a record below the position (held or retried batches)
        batch = {tp: recs for tp, recs in batch.items() if recs}
        if not batch:
            if self.held is not None:
                self._release_held()
            return
        raws: list[RawRecord] = []
        for tp, recs in batch.items():
            raws.extend(raw_records(recs, source_of(tp.topic), tp.partition, self.settings.kind_of(tp.topic)))
        starts = {tp: self.expected[tp] for tp in batch}
        expected = {(source_of(tp.topic), tp.partition): self.expected[tp] for tp in batch}
        defer, found = self._cutter(batch, self.pipeline.clock())
        try:
            result, seconds = self._process(raws, expected, defer)
        except StoreUnavailable as err:
            self._hold(batch, err)
            return
        except StalePositions as err:
            self.sig.stale_batches.inc()
            log.warning("%s; another consumer stored these partitions meanwhile: re-reading stored positions", err)
            self._reposition(batch)
            return
        except DataError as err:  # a record the database refuses (e.g. an id longer than its column)
            log.warning("database refused the batch (%s): storing its records one by one to isolate the "
                        "offending ones as dead letters", str(err).splitlines()[0])
            self._isolate(batch)
            return
        self.faults.hit("after_store_commit")
        self.collector.stored(sum(map(len, map(_PAYLOAD, raws))))
        self.stored_batches, stored = self.stored_batches + 1, 0
        was_held = self.held is not None
        for tp, recs in batch.items():
            given_back = found.deferred.get((source_of(tp.topic), tp.partition))  # (alignment.py)
            self.expected[tp] = recs[-1].offset + 1 if given_back is None else given_back[0]
            stored += (n := len(recs) if given_back is None else sum(r.offset < given_back[0] for r in recs))
            self.consumed.labels(topic=tp.topic).inc(n)
        self.ops.observe_batch(seconds, stored)
        self._give_back(batch, found)
        self._db_written()
        if was_held:
            self._release_held()
        self._count_keys(result.key_problems)
        if self.dlt is not None:
            letters = result.letters if result.dead else []  # exactly the letters stored (poison, bounds, keys...)
            payloads = {(r.source, r.partition, r.offset): r.payload for r in letters and raws}
            self.dlt.after_batch(letters, payloads, {(source_of(tp.topic), tp.partition): (starts[tp], self.expected[tp])
                                                     for tp in batch})
        self._commit({tp: self.expected[tp] for tp in batch})
        self._align()

    def _process(self, raws: list[RawRecord], expected: dict[tuple[str, int], int], defer: Any = None
                 ) -> tuple[Any, float]:
        """The batch's transaction and its duration; a fresh batch is stored in the worker thread while the next
        records are polled (overlap.py), a held batch (partitions paused) right here. `defer`: the event-time cut
        (alignment.py)."""
        def work() -> Any:
            return self.pipeline.process_batch(raws, None, expected, defer=defer)

        if self.held is not None or self.handoff is None:
            t0 = time.perf_counter()
            return work(), time.perf_counter() - t0
        handoff = self.handoff
        return self.overlap.store(work, self.consumer.poll, self.settings.batch_max_records,
                                  lambda: not self.stop.is_set() and not handoff.pending(),
                                  lambda tp, offset: partition_ops.seek(self.consumer, tp, offset),
                                  self.settings.batch_max_bytes)

    def _count_keys(self, problems: Any) -> None:
        """Records accepted with a wrong or missing key (policy accept): counted per topic and warned."""
        for (source, problem), n in problems.items():
            topic = source.split(":", 1)[1]
            self.sig.key_mismatches.labels(topic=topic, problem=problem, action="accepted").inc(n)
            log.warning("%d records on %s accepted with %s (kafka.on_key_mismatch: accept): both topics must be "
                        "keyed by prediction_id, or outcomes can miss their prediction", n, topic,
                        "no key" if problem == "key_missing" else "a key other than their prediction_id")

    def _commit(self, offsets: dict[TopicPartition, int]) -> None:
        """Advisory Kafka commit (asynchronous): the database already holds these positions."""
        try:
            self.consumer.commit_async({tp: OffsetAndMetadata(off, "", -1) for tp, off in offsets.items()},
                                       callback=self._committed)
        except KafkaError as err:
            log.debug("kafka commit not sent: %s", err)

    def _committed(self, offsets: Any, response: Any) -> None:
        if isinstance(response, Exception):
            log.debug("kafka commit failed (advisory, positions are in the database): %s", response)

    def _hold(self, batch: Batch, err: StoreUnavailable) -> None:
        """Database unavailable: keep the batch, pause every partition, retry later; commit nothing."""
        if self.held is None:
            partition_ops.pause(self.consumer, self.owned)
        self.held = batch
        self._db_down(err, f"holding a batch of {sum(len(r) for r in batch.values())} records, consuming paused")

    def _release_held(self) -> None:
        """After the held batch is stored (or revoked): rewind every positioned partition and resume."""
        self.held = None
        ready = [tp for tp in self.owned if tp in self.expected and tp not in self.pending
                 and tp not in self.align.waiting]  # partitions ahead in event time stay paused (alignment.py)
        for tp in ready:
            partition_ops.seek(self.consumer, tp, self.expected[tp])
        if ready:
            partition_ops.resume(self.consumer, ready)
            self._resumed(ready)  # their high-water marks are stale: records may have come while paused

    def _reposition(self, batch: Batch) -> None:
        """A fenced batch: drop it and re-read the stored positions of its partitions."""
        tps = [tp for tp in batch if tp in self.owned]
        if tps:
            partition_ops.pause(self.consumer, tps)
        self.align.forget(tps)
        for tp in tps:
            self.expected.pop(tp, None)
            self.pending.add(tp)
        if self.held is not None:
            self.held = None
            self._release_held()

    def close(self) -> None:
        """Abandon any held batch, commit the stored positions (advisory), leave the group, close clients."""
        self.status.phase = "stopped"
        self.overlap.close()
        if self.side_ids is not None:
            self.side_ids.close()
        self.overlap.take()  # records polled past the stored positions are re-read from them by the next owner
        self._drop_beat()
        c = self.consumer
        if c is None:
            return
        if self.expected and self.held is None:
            try:
                c.commit({tp: OffsetAndMetadata(off, "", -1) for tp, off in self.expected.items()},
                         timeout_ms=2000)
            except KafkaError as err:
                log.debug("final kafka commit failed (advisory): %s", err)
        try:
            c.close(autocommit=False, timeout_ms=5000)
        except Exception as err:  # noqa: BLE001 - closing on shutdown
            log.warning("closing the Kafka consumer: %s", err)
        if self.dlt is not None:
            self.dlt.close()
        self.consumer = None
        log.info("consumer closed after %d stored batches", self.stored_batches)

