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


def meta_key(source: str, partition: int) -> str:
    """Meta row holding the topic id a partition's stored position was read under."""
    return f"log_id:{source}:{partition}"


def current_ids(consumer: Any, topics: Iterable[str], refresh: bool) -> TopicIds:
    """The topics' ids in the consumer's metadata; `refresh` asks the broker first (one metadata request: done
    when positions are checked, so a topic recreated since the last metadata update is seen)."""
    if refresh and hasattr(consumer, "topics"):
        try:
            consumer.topics()
        except KafkaError as err:
            log.warning("cannot refresh topic metadata (%s): comparing topic ids as last known", err)
    cluster = getattr(getattr(consumer, "_client", None), "cluster", None)
    topic_id = getattr(cluster, "topic_id", None)
    out: TopicIds = {}
    for topic in topics:
        uid = topic_id(topic) if topic_id is not None else None
        out[topic] = str(uid) if uid is not None and getattr(uid, "int", 0) != 0 else None  # all zeros: no id
    return out


def replaced(stored: str | None, current: str | None) -> bool:
    """Whether a position stored under topic id `stored` belongs to another log than the topic's `current` id
    (unknown on either side: no, as before topic ids)."""
    return stored is not None and current is not None and stored != current
