"""Which log a stored position belongs to. Kafka offsets do not identify a log: a topic deleted and recreated, or
a broker restarted empty, numbers its records from 0 again, and once the new log has grown past a stored position
that position looks valid while it skips the new log's first records. Kafka 2.8+ gives every topic an id (a UUID,
new on every creation); the id each partition's position was stored under is kept with it in the database, and a
partition whose topic now has another id was replaced, whatever its offsets say (resets.py decides what then).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from kafka import TopicPartition
from kafka.errors import KafkaError

from .log_ends import fetched_ends

log = logging.getLogger("driftline.kafka.consumer")

TopicIds = dict[str, str | None]
"""topic → its id as text, None where the broker reports none (Kafka before 2.8) or the client cannot tell."""


META_PREFIX = "log_id:"


def meta_key(source: str, partition: int) -> str:
    """Meta row holding the topic id a partition's stored position was read under."""
    return f"{META_PREFIX}{source}:{partition}"


REFRESH_TIMEOUT_MS = 5000
"""How long one metadata refresh may take before the ids last known are compared instead."""


class SideIds:
    """Topic ids and log ends asked on a connection of their own (an admin client opened on first use), not the
    consumer's.

    A broker answers one connection's requests in order, and it parks a fetch for up to fetch_max_wait_ms (500 ms
    by default) whenever the consumer has caught up: a metadata request sent on the consumer's connection waited
    behind that fetch before every batch was stored (up to 0.5 s of delay per batch at the head of the stream,
    benchmarks/run_process_bench.py). When the side client cannot answer, the caller falls back to the consumer's
    own refresh, and the side client is tried again `retry_s` later. The lag refresh's end offsets (every 5 s) are
    asked here too: on the consumer's connection they waited behind the parked fetch in the same way, 0.13–0.36 s
    of the main loop between two batches of a backlog (benchmarks/run_process_bench.py)."""

    def __init__(self, open_admin: Callable[[], Any], monotonic: Callable[[], float], retry_s: float = 30.0,
                 isolation_level: str = "read_committed") -> None:
        self.open_admin, self.monotonic, self.retry_s = open_admin, monotonic, retry_s
        self.isolation_level = isolation_level
        """The consumer's (kafka.options may change it): a log end read_committed stops at the last stable offset."""
        self.admin: Any = None
        self.retry_at = -float("inf")

    def read(self, topics: Iterable[str]) -> TopicIds | None:
        """The topics' ids as the broker reports them now; None when the side client is unavailable."""
        described = self._ask(lambda admin: admin.describe_topics(list(topics)), "topic ids")
        if described is None:
            return None
        found = {d.get("name"): d.get("topic_id") for d in described}
        return {t: _id_text(found.get(t)) for t in topics}

    def end_offsets(self, tps: Iterable[TopicPartition], timeout_ms: int) -> dict[TopicPartition, int] | None:
        """Each partition's log end as the broker reports it now (the consumer's isolation level), listed and then
        checked by a fetch at that offset (log_ends.py); None when the side client is unavailable."""
        from kafka.admin import OffsetSpec

        specs = {tp: OffsetSpec.LATEST for tp in tps}

        def ask(admin: Any) -> dict[TopicPartition, int]:
            got = admin.list_partition_offsets(specs, self.isolation_level, timeout_ms)
            listed = {tp: int(got[tp].offset) for tp in specs}  # a partition left out: the consumer is asked
            return fetched_ends(admin, listed, self.isolation_level)  # tansu lists ends short (log_ends.py)

        return self._ask(ask, "log end offsets")

    def _ask(self, request: Callable[[Any], Any], what: str) -> Any:
        """`request(admin)`'s answer; None (and the client closed, retried `retry_s` later) when it fails."""
        if self.admin is None and self.monotonic() < self.retry_at:
            return None
        try:
            if self.admin is None:
                self.admin = self.open_admin()
            return request(self.admin)
        except Exception as err:  # noqa: BLE001 - any failure of the side client: the consumer's path decides
            log.debug("%s from the side client failed (%s): asking on the consumer's connection", what, err)
            self.close()
            self.retry_at = self.monotonic() + self.retry_s
            return None

    def close(self) -> None:
        """Close the side client (reopened at the next read)."""
        admin, self.admin = self.admin, None
        if admin is not None:
            try:
                admin.close()
            except Exception as err:  # noqa: BLE001 - closing a client that may be broken already
                log.debug("closing the topic-id client: %s", err)


def _id_text(uid: Any) -> str | None:
    """A topic id as text; None for no id (Kafka before 2.8 reports none, or all zeros)."""
    if uid is None:
        return None
    text = str(uid)
    return None if text.strip("0-") == "" else text


def current_ids(consumer: Any, topics: Iterable[str], refresh: bool, side: SideIds | None = None) -> TopicIds:
    """The topics' ids in the consumer's metadata; `refresh` asks the broker first (one metadata request for the
    subscribed topics). Done when positions are checked and before every batch is stored: kafka-python fetches by
    topic name and refreshes its metadata only on errors or every metadata_max_age_ms (5 min), so a topic replaced
    while nothing failed (the process paused, its partitions paused while the database was down) went unseen while
    its new log's records were stored as the old one's. Ids read after the batch's records were fetched and equal
    to the ids the partitions were positioned under prove the records come from that log. A `side` client, when
    given, is asked first (SideIds: a request not queued behind the consumer's parked fetch)."""
    topics = list(topics)
    if refresh and side is not None:
        ids = side.read(topics)
        if ids is not None:
            return ids
    if refresh:
        try:
            _refresh(consumer)
        except KafkaError as err:
            log.warning("cannot refresh topic metadata (%s): comparing topic ids as last known", err)
    cluster = getattr(consumer, "_cluster", None) or getattr(getattr(consumer, "_client", None), "cluster", None)
    topic_id = getattr(cluster, "topic_id", None)
    out: TopicIds = {}
    for topic in topics:
        out[topic] = _id_text(topic_id(topic) if topic_id is not None else None)
    return out


def _refresh(consumer: Any) -> None:
    """One metadata request for the subscribed topics, waited for (kafka-python 3's own way, as its topics() does
    for all topics); a client without that machinery (an older release, a stand-in) is asked for topics()."""
    cluster, net, manager = (getattr(consumer, name, None) for name in ("_cluster", "_net", "_manager"))
    if cluster is None or net is None or manager is None:
        if hasattr(consumer, "topics"):
            consumer.topics()
        return
    net.run(manager.wait_for, cluster.request_update(), REFRESH_TIMEOUT_MS)


def replaced(stored: str | None, current: str | None) -> bool:
    """Whether a position stored under topic id `stored` belongs to another log than the topic's `current` id
    (unknown on either side: no, as before topic ids)."""
    return stored is not None and current is not None and stored != current
