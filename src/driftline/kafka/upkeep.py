"""Upkeep of the live consumer between batches, run from its main loop about once a second: broker status, lag,
positions the log fell below, a stuck client rebuilt, dead-letter copies retried, maintenance of owned shards.
A mixin of LiveConsumer (moved out of consumer.py unchanged)."""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable
from typing import Any

from kafka import TopicPartition
from kafka.errors import KafkaError

from . import partition_ops
from ..ingest.pipeline import EXPIRED_STORED_NOW, Pipeline
from ..ingest.stored_now import KeyLog
from ..numbers import counted
from ..storage import ceilings
from ..ops import OpsMetrics
from ..storage.errors import StalePositions, StoreUnavailable, WriteLocked
from ..streak import FailureStreak
from .alignment import IDLE_S
from .assignment import source_of
from .dlt import DeadLetterCopies
from .dns_names import in_bootstrap
from .handoff import Handoff
from .health import (ConsumerStatus, StallWatch, broker_connected, coordinator_address, membership_problem,
                     rebalancing)
from .lag import end_offsets, fetch_position, lags_from, owned_lag
from .log_ids import SideIds, TopicIds
from .loop_gap import BehindCheck, LoopGap
from .loss import EndsSeen
from .overlap import Overlap
from .resets import recorded_problems
from .settings import KafkaSettings
from .signals import KafkaSignals, mark_missing
from .reconnect import connect_once_topics_exist
from .topic_watch import TopicWatch
from .topics import TopicsError

log = logging.getLogger("driftline.kafka.consumer")


def maintenance_streak(monotonic: Callable[[], float]) -> FailureStreak:
    """The record of maintenance passes skipped for a database outage (on-call tryout: one WARNING with the driver's
    whole message every pass, 30 s, for the whole outage)."""
    return FailureStreak("maintenance (implicit negatives, expiry)", log, monotonic=monotonic)


class Upkeep:
    """Housekeeping and maintenance of a LiveConsumer (state it shares with the consumer declared below)."""

    pipeline: Pipeline
    settings: KafkaSettings
    stop: threading.Event
    ops: OpsMetrics
    consumer: Any
    side_ids: SideIds | None
    """A client of its own for the log ends (log_ids.py: the consumer's connection waits behind its parked fetch)."""
    handoff: Handoff | None
    dlt: DeadLetterCopies | None
    sig: KafkaSignals
    status: ConsumerStatus
    monotonic: Callable[[], float]
    stall: StallWatch
    topic_watch: TopicWatch
    resubscribe_due: bool
    """Topics came back after a gap: subscribe anew once not rebalancing (_resubscribe)."""
    overlap: Overlap
    owned: set[TopicPartition]
    expected: dict[TopicPartition, int]
    pending: set[TopicPartition]
    unresolved: dict[TopicPartition, str]
    held: Any
    all_lags: dict[tuple[str, int], int]
    log_ends: dict[TopicPartition, int]
    """Each partition's log end as last asked from the broker (every 5 s with the lags)."""
    ends: EndsSeen
    log_ids: dict[TopicPartition, str | None]
    """The topic id each positioned partition's log had (None: the broker reports none)."""
    topic_ids: Callable[[set[str], bool], TopicIds]
    next_lag: float
    next_housekeeping: float
    next_maintain: float
    maintain_every_s: float
    broker_down_since: float | None
    expiring: bool
    orphans: list[int]
    """Shards no partition of the topics has, as the last maintenance pass found them (`_orphan_shards`)."""
    maintain_failing: FailureStreak
    """Maintenance passes skipped in a row for a database outage (logged at its start, every 5 min, at its end)."""
    """Whether the last maintenance pass expired predictions stored since the pass before (the first such pass of a
    run of them warns)."""
    loop_gap: LoopGap
    """Gaps of this loop (a stopped process): its lapsed membership is not reported as Kafka unreachable."""
    behind_check: BehindCheck
    """Fetched high-water marks below the stored positions, confirmed by the broker before a re-check."""
    rebalance_seen_at: float
    """When the member was last seen in a rebalance (monotonic; -inf never): heartbeats are stale until after it."""
    member: str
    """This process's key among the maintenance ceilings in the database (storage/ceilings.py)."""
    next_beat: float
    beat_owned: set[TopicPartition]
    """The partitions owned at the last heartbeat (a new assignment is recorded at once, not after HEARTBEAT_S)."""
    beat_stored: bool
    pending_since: float | None
    """Since when (monotonic) partitions have waited to be positioned, as the last heartbeat saw (None: none)."""
    """Whether this member's ceiling row may be in the database (deleted when it holds nothing back)."""

    # provided by LiveConsumer (or its other mixins)
    connect: Callable[[], bool]
    _apply_handoff: Callable[[], None]
    _recheck: Callable[[set[TopicPartition], str], None]
    _commit: Callable[[dict[TopicPartition, int]], None]
    _align: Callable[[], None]
    _maintenance_ceiling: Callable[[], float]

    # --- housekeeping ---------------------------------------------------------------------------
    def _housekeeping(self) -> None:
        """Once a second: broker status, positions left behind by the log; every 5 s: lag of every partition;
        every maintain_every_s: maturity/expiry of our shards; dead-letter copies still missing. None of it once
        stopping: each of its database calls could wait out a connect timeout (10 s) before the consumer closes."""
        if self.stop.is_set():
            return
        now = self.monotonic()
        self.next_housekeeping = now + 1.0
        if rebalancing(self.consumer):
            self.rebalance_seen_at = now
        self.loop_gap.observe(now, self.consumer)
        self._broker_status(now, self.loop_gap.excuses(now))
        if self.status.broker_ok or self.status.unresolved:  # topics missing: /readyz, kafka_up (topic_watch.py);
            # also while the coordinator's address does not resolve: the bootstrap server answers the metadata
            back = self.topic_watch.observe(self.consumer)
            for host, port in self.topic_watch.brokers_to_resolve(self.consumer):
                self.settings.resolutions.check(host, port)
            if back:
                log.warning("%s", back)
                self.resubscribe_due = True
        self.status.missing_topics = self.topic_watch.problem() or ""
        mark_missing(self.sig, self.settings.topics, self.topic_watch.missing)
        if self.resubscribe_due and not rebalancing(self.consumer):
            self._resubscribe()
        problem = membership_problem(self.consumer, now - self.rebalance_seen_at) or self._stale_metadata()
        self.sig.group_stable.set(0 if problem else 1)
        if self.stall.observe(problem, now):
            self._rebuild(now)
            return
        self._pass_records_not_stored()
        if now >= self.next_lag and self.status.broker_ok:
            self.next_lag = now + 5.0
            self._refresh_all_lags()
        lags, behind = dict(self.all_lags), {}
        for tp, start in self.expected.items():
            hw = partition_ops.highwater(self.consumer, tp)  # fetched: stale while the partition is paused (a held batch)
            asked = self.log_ends.get(tp)
            if hw is not None or asked is not None:
                end = max(x for x in (hw, asked) if x is not None)
                lags[(tp.topic, tp.partition)] = self.all_lags[(tp.topic, tp.partition)] = max(0, end - start)
                # kept in the sample: a partition leaving the positions (reset, re-check, revoke) while the next
                # refresh fails showed the sample's lag from up to 5 s before (CI: a stored backlog, 2931)
                self.ends.observe(tp, start, end, confirmed=self.log_ids.get(tp) is None)
            if hw is not None and hw < start and self.held is None:
                behind[tp] = hw
        self.ops.set_lags(lags)
        self.status.lag = owned_lag(lags, self.owned)  # /readyz: this member's own (the series: every partition)
        really, asked = self.behind_check.really_behind(self.consumer, self.side_ids, behind, self.expected)
        self.log_ends.update(asked)  # a cached high-water mark can be older than positions stored meanwhile
        if really:
            self._recheck(really, "the log end fell below the stored position")
        if self.dlt is not None and self.held is None:
            self.dlt.maybe_retry({(source_of(tp.topic), tp.partition): off for tp, off in self.expected.items()})
        self._align()  # a partition at its end holds no one back any more (alignment.py)
        if (now >= self.next_beat or self.owned != self.beat_owned) and self.held is None:
            self._beat(now)
        if now >= self.next_maintain and self.held is None and self.expected:
            self.next_maintain = now + self.maintain_every_s
            self.maintain()

    def _pass_records_not_stored(self) -> None:
        """Move stored positions over offsets that hold nothing to store — transaction markers, and records of
        aborted transactions under read_committed — once kafka-python's own fetch position has passed them and no
        polled record is waiting: a position is stored with a batch's last record, so a partition ending in a
        marker showed lag 1 (an aborted tail, its size) until new records came, and re-read them at each start."""
        if self.held is not None or self.overlap.carry:
            return
        moves: dict[TopicPartition, tuple[int, int]] = {}
        for tp in self.owned:
            start = self.expected.get(tp)
            if start is None or tp in self.pending or tp in self.unresolved:
                continue
            position = fetch_position(self.consumer, tp)
            if position is not None and position > start:
                moves[tp] = (start, position)
        if not moves:
            return
        try:
            self.pipeline.store.advance_positions({(source_of(tp.topic), tp.partition): m for tp, m in moves.items()})
        except StalePositions as err:  # another consumer stored there: its next batch here is fenced and re-read
            log.info("positions not moved over records without data: %s", err)
            return
        except StoreUnavailable as err:
            log.debug("positions not moved over records without data: %s", err)
            return
        for tp, (_, position) in moves.items():
            self.expected[tp] = position
        if self.dlt is not None:
            self.dlt.after_batch([], {}, {(source_of(tp.topic), tp.partition): m for tp, m in moves.items()})
        self._commit({tp: position for tp, (_, position) in moves.items()})

    def _refresh_all_lags(self) -> None:
        """Lag of every partition of both topics (owned or not) from the stored positions and the log ends
        (owned partitions are refreshed every second from the fetch high-water marks); a partition held by an
        unresolved offset reset (recorded in the database) counts its whole log (lag.py), and the reset's text
        shows the log range now."""
        store = self.pipeline.store
        self._confirm_ends()
        try:
            ends = end_offsets(self.consumer, self.settings.topics, side=self.side_ids)
            stored = {t: store.positions(source_of(t)) for t in self.settings.topics}
            held = {tp: p for tp, p in recorded_problems(store, {source_of(t): t for t in self.settings.topics})
                    .items() if tp in ends}
            starts = self.consumer.beginning_offsets(list(held), timeout_ms=2000) if held else {}
        except (KafkaError, StoreUnavailable) as err:
            log.debug("lag of unowned partitions not updated: %s", err)
            return
        self.all_lags = lags_from(ends, stored, self.expected, starts)
        self.log_ends = dict(ends)
        for tp in set(self.unresolved) & set(starts):  # /readyz shows the log as it is now, not as it was found
            self.unresolved[tp] = held[tp].describe(tp.topic, tp.partition, (starts[tp], ends[tp]))

    def _confirm_ends(self) -> None:
        """Topic ids read now: the log ends seen before of partitions whose log is unchanged were that log's
        (loss.EndsSeen; a changed id is rechecked at the partition's next batch)."""
        known = {tp: i for tp, i in self.log_ids.items() if i is not None and tp in self.ends.unconfirmed}
        if known:
            try:
                ids = self.topic_ids({tp.topic for tp in known}, True)
            except KafkaError as err:  # nothing confirmed: the ends wait for the next read
                log.debug("topic ids not read: %s", err)
                return
            self.ends.confirm(tp for tp, i in known.items() if ids.get(tp.topic) == i)

    def _beat(self, now: float) -> None:
        """Every ceilings.HEARTBEAT_S and after each change of assignment: record this member's maintenance ceiling
        with the wall clock (-inf while a partition is being positioned, for at most IDLE_S: a broker or database
        outage then holds nobody back, as a stuck partition does not), so `serve`'s and the other members'
        maintenance wait for its slowest partition too; with none holding records, delete it."""
        self.next_beat, self.beat_owned = now + ceilings.HEARTBEAT_S, set(self.owned)
        self.pending_since = (self.pending_since if self.pending_since is not None else now) if self.pending else None
        positioning = self.pending_since is not None and now - self.pending_since <= IDLE_S
        ceiling = -math.inf if positioning else self._maintenance_ceiling() if self.expected else math.inf
        try:  # a short wait for the lock: the lag refresh and health above must not stall behind another writer
            if ceiling != math.inf:
                ceilings.record(self.pipeline.store, self.member, ceiling, self.pipeline.clock(), ceilings.BEAT_WAIT_S)
                self.beat_stored = True
            elif self.beat_stored:
                ceilings.drop(self.pipeline.store, self.member, ceilings.BEAT_WAIT_S)
                self.beat_stored = False
        except WriteLocked as err:  # another writer's transaction: tried again at the next housekeeping
            self.next_beat = now + 1.0
            log.debug("maintenance ceiling not recorded: %s", err)
        except StoreUnavailable as err:  # an outage (each try may wait out a connect timeout): the next heartbeat
            log.debug("maintenance ceiling not recorded: %s", err)  # tries again (the row may go stale)

    def _drop_beat(self) -> None:
        """A clean stop: this member's ceiling row is deleted, tried once and waited for at most
        ceilings.STOP_WAIT_S (a crash, or a database that does not answer, leaves it: ignored after
        ceilings.FRESH_S). Once: close() runs twice (run(), then run_service), and each try against a database
        that did not answer waited out a connect timeout (10 s) or a lock slice."""
        if not self.beat_stored:
            return
        self.beat_stored = False
        why = ceilings.drop_within(self.pipeline.store, self.member, ceilings.STOP_WAIT_S)
        if why is not None:
            log.info("maintenance ceiling row left behind (ignored after %gs): %s", ceilings.FRESH_S, why)

    def maintain(self) -> None:
        """Implicit negatives and expiry for the partitions (shards) this process owns, and for the shards no
        partition of the topics has any more (`_orphan_shards`)."""
        owned = {tp.partition for tp in self.expected}
        try:
            shards = sorted(owned | set(self._orphan_shards(owned)))
            counts = self.pipeline.maintain(shards, self._maintenance_ceiling(), member=self.member)
        except WriteLocked:  # another writer's transaction: no outage of its own (the batches report a long one)
            log.info("maintenance deferred: the database write lock is held by another writer; next pass in %gs",
                     self.maintain_every_s)
            return
        except StoreUnavailable as err:
            self.maintain_failing.failed(err)  # a warning at the start of an outage, not every pass of it
            return
        self.maintain_failing.succeeded()
        fresh = counts.pop(EXPIRED_STORED_NOW, 0)
        self.pipeline.stored_now = KeyLog()
        done = {f"{k[0]}": v for k, v in counts.items() if v}
        if done:
            log.info("maintenance on shards %s: %s", shards, done)
        if fresh and not self.expiring:
            log.warning("maintenance expired %s stored since its previous pass: more than labels.horizon (%s) "
                        "older than the newest event and without an outcome, they count as expired, never "
                        "labelled, and an outcome arriving for them later cannot join (old events are refused as "
                        "past_horizon only behind the newest event stored before their batch). Further passes that "
                        "do the same are not warned about until one does not", counted(fresh, "prediction"),
                        self.pipeline.config.labels.horizon)
        self.expiring = bool(fresh)

    def _orphan_shards(self, owned: set[int]) -> list[int]:
        """Shards holding join rows that no partition of the consumed topics has (SRE tryout: a broker reset, topics
        recreated with 2 partitions instead of 4, and the join rows of partitions 2-3 were never expired or matured
        again: nobody owned them). Every member maintains them besides its own: the watermark is capped by every
        member's ceiling (ceilings.shared), so that is safe, and a second pass finds nothing left. None while a
        topic's partitions are unknown; the first pass that finds some (or other ones) warns."""
        live: set[int] = set()
        for topic in self.settings.topics:
            parts = partition_ops.known_partitions(self.consumer, topic)
            if parts is None:
                return []
            live |= parts
        orphans = sorted(set(self.pipeline.store.stored_shards()) - live - owned)
        if orphans and orphans != self.orphans:
            log.warning("join rows in shards %s, which no partition of %s has now (topics recreated with fewer "
                        "partitions?): maintained by every member with its own partitions, so they still expire "
                        "and mature", orphans, ", ".join(self.settings.topics))
        self.orphans = orphans
        return orphans

    def _broker_status(self, now: float, excused: bool = False) -> None:
        """Whether the group coordinator is reachable; the change (lost or back) is logged once, naming a broker
        address this host cannot resolve when one is why (verification tryout: a broker restarted advertising such
        a name read as "group coordinator lost" until kafka.stall_restart rebuilt the client). `excused`: just
        after a gap of this loop (loop_gap.py) a lost coordinator is not judged yet (the status stays as it was)."""
        ok = broker_connected(self.consumer, now - self.rebalance_seen_at)
        if excused and not ok:
            return
        coordinator = coordinator_address(self.consumer) if ok else None
        if coordinator is not None and self.settings.resolutions.failed(*coordinator):
            ok = False  # named by FindCoordinator, but at an address that does not resolve (live: "reachable again"
            # and "unreachable" every 2-5 s while tansu advertised one, the coordinator found and lost in turn)
        named = not ok or bool(self.topic_watch.missing)  # a bad advertised host comes before missing topics too
        found = self.settings.resolutions.explain(self.settings.bootstrap) if named else None
        unresolved = found.message(self.settings.bootstrap) if found is not None else ""
        if ok and self.broker_down_since is not None:
            log.warning("Kafka reachable again after %.0fs", now - self.broker_down_since)
            self.broker_down_since = None
        elif not ok and (self.broker_down_since is None or unresolved and not self.status.unresolved):
            self.broker_down_since = now if self.broker_down_since is None else self.broker_down_since
            log.warning("Kafka unreachable (%s); consuming resumes by itself when it is back", unresolved or
                        "group coordinator lost: the broker is down, or it answers but cannot name the group's "
                        "coordinator")
        self.status.unresolved = unresolved
        if ok != self.status.broker_ok:
            self.status.since = now
            if ok:  # every partition's lag asked at once, not at the next 5 s refresh (SRE tryout: the series showed
                self.next_lag = 0.0  # the backlog of before a broker restarted empty for up to 4.6 s after it)
        self.status.broker_ok = ok

    def _stale_metadata(self) -> str | None:
        """Topics missing while the metadata sends clients to an advertised name that does not resolve: kafka-python
        keeps that metadata (it asks the unresolvable broker, never the bootstrap server again), so the fixed broker
        and its recreated topics are seen only by a new client, built after kafka.stall_restart (verify tryout: /readyz
        named the old name for 6 minutes after the fix, until `run` was restarted)."""
        if not self.topic_watch.missing:
            return None
        bad = self.settings.resolutions.explain(self.settings.bootstrap)
        if bad is None or in_bootstrap(bad.host, bad.port, self.settings.bootstrap):
            return None
        return f"topics missing and the metadata names {bad.host}:{bad.port}, which does not resolve"

    def _resubscribe(self) -> None:
        """Topics back after a gap: a member that joined while they were missing never gets their partitions
        (kafka-python 3.0.12 on tansu), so it subscribes anew; not while it is rebalancing (a LeaveGroup while the
        group forms wedges tansu's group), nor once it owns partitions again."""
        self.resubscribe_due = False
        if self.owned or self.topic_watch.missing:
            return
        log.info("subscribing to %s again", ", ".join(self.settings.topics))
        self.consumer.unsubscribe()
        self.consumer.subscribe(list(self.settings.topics), listener=self.handoff)

    def _rebuild(self, now: float) -> None:
        """Group membership broken for longer than kafka.stall_restart: forget every partition as on a lost
        assignment, close this client and connect a new one (it resumes at the positions stored in the database)."""
        problem = membership_problem(self.consumer) or "group membership broken"
        log.warning("Kafka client stuck for %.0fs (%s; kafka.stall_restart %.0fs): closing it and connecting a new "
                    "one (positions are in the database: nothing is lost or counted twice)",
                    self.stall.lasted(now), problem, self.settings.stall_restart_s)
        self.sig.client_restarts.inc()
        self.stall.reset()
        if self.handoff is not None:
            self.handoff.on_partitions_lost(set(self.owned))
            self._apply_handoff()
            self.handoff.detach()
        self.held = None
        self.overlap.take()  # records polled by the stuck client: the new one resumes at the stored positions
        old, self.consumer = self.consumer, None
        try:
            old.close(autocommit=False, timeout_ms=2000)
        except Exception as err:  # noqa: BLE001 - the old client is being discarded
            log.debug("closing the stuck Kafka client: %s", err)
        if self.dlt is not None:
            self.dlt.close()
            self.dlt = None
        # e.g. a reset broker whose topics are not recreated yet: one ERROR line per gap (reconnect.py); a gap the
        # topic watch logged already goes on with reminders only, its end the watch's line (attach: TopicWatch.reset)
        connect_once_topics_exist(self.connect, self.stop, self.status, log, self.monotonic,
                                  logged_since=self.topic_watch.since, reason=self._topics_problem)
        self.loop_gap.reset()  # the wait for the new client is no gap of the loop

    def _topics_problem(self, err: TopicsError) -> str:
        """/readyz's reason while a rebuilt client finds the topics missing: a bad advertised host first; the
        missing ones marked for DriftlineKafkaTopicsMissing."""
        mark_missing(self.sig, self.settings.topics, err.missing)
        return self.settings.resolutions.before(str(err), self.settings.bootstrap)
