"""Partition ownership for the live consumer: rebalance hand-over applied in the main loop, and positioning of
newly assigned partitions — stored positions checked against the log (resets.py) before they are trusted."""

from __future__ import annotations

import logging
import threading
from dataclasses import replace
from collections.abc import Callable
from typing import Any

from kafka import TopicPartition
from kafka.errors import KafkaError

from . import partition_ops
from ..ingest.pipeline import Pipeline
from ..storage.errors import StalePositions, StoreUnavailable
from .dlt import DeadLetterCopies
from .handoff import Handoff
from .health import ConsumerStatus
from . import log_ids
from .loss import EndsSeen, skipped
from .resets import Placement, move_position, place, record_problem, recorded_problems
from .settings import KafkaSettings
from .signals import KafkaSignals

log = logging.getLogger("driftline.kafka.consumer")


def source_of(topic: str) -> str:
    """Position source name of a topic in the store."""
    return f"kafka:{topic}"


def fmt(tps: set[TopicPartition]) -> str:
    """'topic[0], topic[1]' for log lines."""
    return ", ".join(f"{tp.topic}[{tp.partition}]" for tp in sorted(tps, key=lambda t: (t.topic, t.partition)))


class Ownership:
    """The partitions a LiveConsumer owns, where each resumes, and which are stopped by an offset reset."""

    pipeline: Pipeline
    settings: KafkaSettings
    stop: threading.Event
    consumer: Any
    handoff: Handoff | None
    dlt: DeadLetterCopies | None
    sig: KafkaSignals
    status: ConsumerStatus
    monotonic: Callable[[], float]
    owned: set[TopicPartition]
    pending: set[TopicPartition]
    expected: dict[TopicPartition, int]
    unresolved: dict[TopicPartition, str]
    unowned_since: float | None
    held: Any
    db_retry_at: float
    align: Any
    """alignment.Alignment (forgets partitions handed over or positioned again)."""
    log_ends: dict[TopicPartition, int]
    next_lag: float
    """When the lags of every partition are next asked (upkeep.py); 0 asks at the next housekeeping."""
    next_housekeeping: float
    """When upkeep's housekeeping (lag, health, heartbeat) is next due; 0 runs it at the end of this step."""
    ends: EndsSeen
    """Log ends seen per positioned partition: what a reset skipped of the old log (loss.py)."""

    # provided by LiveConsumer
    records_exist: Callable[[dict[TopicPartition, int]], set[TopicPartition]]
    topic_ids: Callable[[set[str], bool], log_ids.TopicIds]
    log_ids: dict[TopicPartition, str | None]
    _release_held: Callable[[], None]
    _db_down: Callable[..., None]
    _db_read: Callable[[], None]
    _db_written: Callable[[], None]

    def _apply_handoff(self) -> None:
        assert self.handoff is not None
        assigned, dropped = self.handoff.take()
        self.align.forget(assigned | dropped)
        for tp in dropped:
            self.owned.discard(tp)
            self.pending.discard(tp)
            self.expected.pop(tp, None)
            self.log_ids.pop(tp, None)
            self._unresolve(tp)
            if self.dlt is not None:
                self.dlt.forget((source_of(tp.topic), tp.partition))
            if self.held is not None:
                self.held.pop(tp, None)
        if self.held is not None and not self.held:
            self._release_held()
        if assigned:
            self.owned |= assigned
            self.pending |= assigned
        if dropped or assigned:
            self.next_lag = 0.0  # the lags of partitions handed over or taken: from the database now, not the
            # sample of up to 5 s before (a partition dropped kept this member's own last lag until then)
            self.status.lag = None  # until the next housekeeping sums the partitions now owned (within 1 s)
            self.status.assigned = len(self.owned)
            self.status.per_topic = tuple((t, sum(tp.topic == t for tp in self.owned)) for t in self.settings.topics)
            self.sig.partitions_owned.set(len(self.owned))
            if self.owned:
                self.unowned_since = None
            elif self.unowned_since is None:
                self.unowned_since = self.monotonic()
            self._check_copartitioned()

    def _check_copartitioned(self) -> None:
        """Both topics must keep equal partition numbers (someone may add partitions to one of them)."""
        by_topic: dict[str, set[int]] = {t: set() for t in self.settings.topics}
        for tp in self.owned:
            by_topic.setdefault(tp.topic, set()).add(tp.partition)
        a, b = (by_topic[t] for t in self.settings.topics)
        if a != b:
            log.error("assignment is not co-partitioned (%s: %s, %s: %s): the topics' partition counts differ; "
                      "stopping", self.settings.topics[0], sorted(a), self.settings.topics[1], sorted(b))
            self.status.phase, self.status.error = "stopped", "topics not co-partitioned"
            self.stop.set()

    def _position_pending(self) -> None:
        """Check the positions stored with the state against the log's start and end, apply
        kafka.on_offset_reset to any outside it, seek and resume (a `fail` partition stays paused)."""
        tps = sorted(self.pending, key=lambda tp: (tp.topic, tp.partition))
        store = self.pipeline.store
        try:
            topics = {tp.topic for tp in tps}
            stored = {t: store.positions(source_of(t)) for t in topics}
            problems = recorded_problems(store, {source_of(t): t for t in topics})  # one read for all partitions
            recorded = {tp: problems.get(tp) for tp in tps}
            id_rows = store.meta_prefixed(log_ids.META_PREFIX)
            stored_ids = {tp: id_rows.get(log_ids.meta_key(source_of(tp.topic), tp.partition)) for tp in tps}
        except StoreUnavailable as err:
            self._db_down(err, f"reading stored positions of {len(tps)} partitions", write=False)
            return
        self._db_read()  # reads never wait for the write lock: writes below say whether it is writable
        try:
            starts = self.consumer.beginning_offsets(tps, timeout_ms=5000)
            ends = self.consumer.end_offsets(tps, timeout_ms=5000)
            ids = self.topic_ids(topics, True)
        except KafkaError as err:
            log.warning("cannot read the log start/end offsets of %d partitions (%s); retrying", len(tps), err)
            self.db_retry_at = self.monotonic() + 1.0
            return
        replaced = {tp for tp in tps if log_ids.replaced(stored_ids[tp], ids.get(tp.topic))
                    and stored[tp.topic].get(tp.partition) is not None}
        suspect = {tp: stored[tp.topic][tp.partition] - 1 for tp in tps if recorded[tp] is None
                   and tp not in replaced and stored[tp.topic].get(tp.partition, 0) > ends[tp]}
        try:
            exist = self.records_exist(suspect) if suspect else set()
        except KafkaError as err:
            log.warning("cannot confirm positions beyond the reported log end (%s); retrying", err)
            self.db_retry_at = self.monotonic() + 1.0
            return
        for tp in exist:
            log.info("%s[%d]: the broker reports end offset %d but the record at %d exists: trusting the stored "
                     "position", tp.topic, tp.partition, ends[tp], suspect[tp])
        resumed = []
        for tp in tps:
            pos = stored[tp.topic].get(tp.partition)
            end = pos if tp in exist and pos is not None else ends[tp]
            pl = place(pos, starts[tp], end, self.settings.on_offset_reset, recorded[tp], tp in replaced)
            try:
                if not self._apply_placement(tp, pl, recorded[tp] is not None, ids.get(tp.topic), stored_ids[tp]):
                    continue
            except StoreUnavailable as err:
                stored = "its offset reset" if pl.problem is not None else \
                    "the topic id of its log (first start)" if stored_ids[tp] is None else "its log's new topic id"
                self._db_down(err, f"storing {stored} for {tp.topic}[{tp.partition}]; consuming of unpositioned "
                              "partitions paused")
                return
            except StalePositions as err:
                log.warning("%s; another consumer stored this partition meanwhile: re-reading", err)
                continue
            self.ends.restart(tp, self.expected[tp], max(end, self.expected[tp]))
            self.log_ends[tp] = end  # whether it has records left (alignment.py), until the next lag refresh
            resumed.append(tp)
        if resumed:
            partition_ops.resume(self.consumer, resumed)
            self.next_housekeeping = 0.0  # their lag now, in this step (nothing is stored in it), not after the
            # first batch: a backlog's first batch of 20,000 records took seconds, /readyz naming no lag meanwhile
        self.pending -= set(resumed) | set(self.unresolved)
        log.info("resuming at stored positions: %s",
                 ", ".join(f"{tp.topic}[{tp.partition}]@{self.expected[tp]}" for tp in resumed) or "none")
        if self.dlt is not None:
            for tp in resumed:
                self.dlt.adopt((source_of(tp.topic), tp.partition), self.expected[tp])

    def _apply_placement(self, tp: TopicPartition, pl: Placement, was_recorded: bool, log_id: str | None = None,
                         stored_id: str | None = None) -> bool:
        """Log, count and apply an offset-reset decision; False when the partition stays stopped. The topic id
        `log_id` is stored with the position the partition resumes from (with a moved position, in its
        transaction)."""
        source, policy = source_of(tp.topic), self.settings.on_offset_reset
        id_meta = {log_ids.meta_key(source, tp.partition): log_id} if log_id is not None else {}
        if pl.problem is not None:
            problem = pl.problem if was_recorded else replace(
                pl.problem, found_at=self.pipeline.clock(), old_end=self.ends.old_end(tp, pl.problem.stored))
            what = problem.describe(tp.topic, tp.partition, pl.log)
            if pl.seek is None:
                if not was_recorded:
                    record_problem(self.pipeline.store, source, tp.partition, problem)
                    self._db_written()
                    self.sig.offset_resets.labels(topic=tp.topic, problem=pl.problem.kind, policy=policy).inc()
                lost = skipped(problem, problem.start).of_previous(problem.old_end)
                log.error("offset reset: %s; kafka.on_offset_reset is fail: partition stopped until a restart "
                          "with earliest or latest; records skipped so far: %s", what, lost)
                self.unresolved[tp] = what
                self.sig.offset_unresolved.labels(topic=tp.topic, partition=str(tp.partition)).set(1)
                return False
            self.sig.offset_resets.labels(topic=tp.topic, problem=pl.problem.kind, policy=policy).inc()
            cost = skipped(problem, pl.seek)
            self.sig.offset_reset_skipped.labels(topic=tp.topic, log="found").inc(cost.found)
            self.sig.offset_reset_skipped.labels(topic=tp.topic, log="previous").inc(cost.previous or 0)
            log.error("offset reset: %s; kafka.on_offset_reset is %s: resuming at offset %d; %s", what, policy,
                      pl.seek, cost.describe(problem.old_end))
        if pl.move_to is not None and pl.problem is not None:
            move_position(self.pipeline.store, source, tp.partition, pl.problem.stored, pl.move_to, id_meta)
            self._db_written()
        elif log_id is not None and log_id != stored_id:
            self.pipeline.store.set_meta(log_ids.meta_key(source, tp.partition), log_id)
            self._db_written()
        self.log_ids[tp] = log_id
        self._unresolve(tp)
        assert pl.seek is not None
        partition_ops.seek(self.consumer, tp, pl.seek)
        self.expected[tp] = pl.expected
        return True

    def _unresolve(self, tp: TopicPartition) -> None:
        if self.unresolved.pop(tp, None) is not None:
            self.sig.offset_unresolved.remove(tp.topic, str(tp.partition))

    def _check_log_ids(self, batch: dict[TopicPartition, list[Any]]) -> None:
        """Partitions whose topic id changed since they were positioned (metadata asked for now, after the batch
        was fetched) are checked again before any of their records is stored: their log was replaced. Their
        fetched records are not stored (kafka-python fetches by name: they may come from either log) and said so."""
        known = {tp: self.log_ids.get(tp) for tp in batch}
        if not any(known.values()):
            return
        ids = self.topic_ids({tp.topic for tp, i in known.items() if i}, True)
        moved = {tp for tp, i in known.items() if log_ids.replaced(i, ids.get(tp.topic))}
        self.ends.confirm(tp for tp, i in known.items() if i is not None and ids.get(tp.topic) == i)
        if moved:
            self._recheck(moved, "the topic's id changed (deleted and recreated, or the broker restarted empty)")
            log.warning("%d fetched records of %s not stored: fetched by topic name around the replacement, they may "
                        "come from either log (kafka.on_offset_reset decides where the partitions resume)",
                        sum(len(batch[tp]) for tp in moved), fmt(moved))

    def _recheck(self, tps: set[TopicPartition], why: str) -> None:
        """A position left the log while consuming: pause, forget it and check it again like a new assignment."""
        tps = {tp for tp in tps if tp in self.owned and tp not in self.pending}
        if not tps:
            return
        log.warning("%s for %s: checking the stored positions against the log again", why, fmt(tps))
        partition_ops.pause(self.consumer, tps)
        self.align.forget(tps)
        for tp in tps:
            self.expected.pop(tp, None)
            self.pending.add(tp)
