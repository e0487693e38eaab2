"""kafka-python calls on named partitions that tolerate a partition revoked meanwhile.

A rebalance can take partitions away inside any poll() — including the polls made while a batch is stored
(overlap.py) — and the main loop learns of it at its next hand-over. Until then its own state still names them,
and kafka-python refuses a call on a partition it no longer holds (highwater: IllegalStateError; pause, resume:
KeyError; seek: ValueError 'Unassigned partition'). SRE tryout: a broker reset followed by a rebalance ended
`run` with "unexpected IllegalStateError: Partition is not assigned". Such a call is moot (the partition is
handed over and its state dropped at the next hand-over), so it is skipped here instead of ending the process.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from kafka import TopicPartition
from kafka.errors import IllegalStateError

log = logging.getLogger("driftline.kafka.consumer")


def _held(consumer: Any, tps: Iterable[TopicPartition]) -> list[TopicPartition]:
    """The partitions of `tps` the client holds now (all of them when it cannot say)."""
    wanted = list(tps)
    try:
        assigned = consumer.assignment()
    except Exception:  # noqa: BLE001 - a client without it (tests' stand-ins): ask for all, as before
        return wanted
    kept = [tp for tp in wanted if tp in assigned]
    if len(kept) < len(wanted):
        log.debug("skipped for partitions revoked meanwhile: %s", sorted(set(wanted) - set(kept)))
    return kept


def highwater(consumer: Any, tp: TopicPartition) -> int | None:
    """The fetched high-water mark of `tp`; None when unknown or the partition is no longer assigned."""
    try:
        return consumer.highwater(tp)  # type: ignore[no-any-return]
    except IllegalStateError:
        return None


def pause(consumer: Any, tps: Iterable[TopicPartition]) -> None:
    """Pause the partitions of `tps` still assigned."""
    for tp in _held(consumer, tps):
        try:
            consumer.pause(tp)
        except KeyError:  # revoked between the check and the call
            pass


def resume(consumer: Any, tps: Iterable[TopicPartition]) -> None:
    """Resume the partitions of `tps` still assigned."""
    for tp in _held(consumer, tps):
        try:
            consumer.resume(tp)
        except KeyError:
            pass


def seek(consumer: Any, tp: TopicPartition, offset: int) -> None:
    """Seek `tp` to `offset` if it is still assigned."""
    if not _held(consumer, [tp]):
        return
    try:
        consumer.seek(tp, offset)
    except (KeyError, ValueError) as err:
        if isinstance(err, ValueError) and "Unassigned" not in str(err):
            raise


def known_partitions(consumer: Any, topic: str) -> set[int] | None:
    """The partition ids of `topic` in the client's last metadata, None when it has none for it. Never asks the broker
    (KafkaConsumer.partitions_for_topic blocks on a metadata request when the topic is unknown)."""
    try:
        cluster = getattr(consumer, "_cluster", None) or consumer._client.cluster  # noqa: SLF001
        parts = cluster.partitions_for_topic(topic)
    except Exception:  # noqa: BLE001 - a stand-in or another kafka-python layout: nothing known
        return None
    return set(parts) if parts else None
