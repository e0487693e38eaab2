"""Which log a stored position belongs to. Kafka offsets do not identify a log: a topic deleted and recreated, or
a broker restarted empty, numbers its records from 0 again, and once the new log has grown past a stored position
that position looks valid while it skips the new log's first records. Kafka 2.8+ gives every topic an id (a UUID,
new on every creation); the id each partition's position was stored under is kept with it in the database, and a
partition whose topic now has another id was replaced, whatever its offsets say (resets.py decides what then).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from kafka.errors import KafkaError

log = logging.getLogger("driftline.kafka.consumer")

TopicIds = dict[str, str | None]
"""topic → its id as text, None where the broker reports none (Kafka before 2.8) or the client cannot tell."""


META_PREFIX = "log_id:"


def meta_key(source: str, partition: int) -> str:
    """Meta row holding the topic id a partition's stored position was read under."""
    return f"{META_PREFIX}{source}:{partition}"


REFRESH_TIMEOUT_MS = 5000
"""How long one metadata refresh may take before the ids last known are compared instead."""


def current_ids(consumer: Any, topics: Iterable[str], refresh: bool) -> TopicIds:
    """The topics' ids in the consumer's metadata; `refresh` asks the broker first (one metadata request for the
    subscribed topics). Done when positions are checked and before every batch is stored: kafka-python fetches by
    topic name and refreshes its metadata only on errors or every metadata_max_age_ms (5 min), so a topic replaced
    while nothing failed (the process paused, its partitions paused while the database was down) went unseen while
    its new log's records were stored as the old one's. Ids read after the batch's records were fetched and equal
    to the ids the partitions were positioned under prove the records come from that log."""
    if refresh:
        try:
            _refresh(consumer)
        except KafkaError as err:
            log.warning("cannot refresh topic metadata (%s): comparing topic ids as last known", err)
    cluster = getattr(consumer, "_cluster", None) or getattr(getattr(consumer, "_client", None), "cluster", None)
    topic_id = getattr(cluster, "topic_id", None)
    out: TopicIds = {}
    for topic in topics:
        uid = topic_id(topic) if topic_id is not None else None
        out[topic] = str(uid) if uid is not None and getattr(uid, "int", 0) != 0 else None  # all zeros: no id
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
