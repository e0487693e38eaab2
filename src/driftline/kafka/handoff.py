"""Rebalance hand-over for kafka-python 3: the listener runs on kafka-python's IO thread inside the main thread's
poll(), so it only records what changed and pauses new partitions; the main loop reads the stored positions,
seeks and resumes (never blocking calls or database IO in the callback)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from kafka import ConsumerRebalanceListener, TopicPartition


class Handoff(ConsumerRebalanceListener):
    """Collects revoked/lost and newly assigned partitions for the main loop; pauses the new ones."""

    def __init__(self, pause: Callable[..., None], on_event: Callable[[str, set[TopicPartition]], None] | None = None
                 ) -> None:
        self._pause = pause
        self._on_event = on_event
        self._lock = threading.Lock()
        self._assigned: set[TopicPartition] = set()
        self._dropped: set[TopicPartition] = set()
        self.generations = 0
        self._detached = False

    def detach(self) -> None:
        """The client is being discarded (its partitions already handed over as lost): what it reports while it
        closes is ignored (a rebuilt client logged "partitions revoked" twice)."""
        self._detached = True

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        """Remember revoked partitions; the main loop forgets their positions and held records."""
        if self._detached:
            return
        revoked = set(revoked)
        if self._on_event is not None and revoked:
            self._on_event("revoke", revoked)
        with self._lock:
            self._dropped |= revoked
            self._assigned -= revoked

    def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        """Evicted (session expired): same hand-over as a revocation; the store's position guard fences us."""
        self.on_partitions_revoked(lost)

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        """Pause the new partitions (no records until the main loop seeks them to the stored positions)."""
        if self._detached:
            return
        assigned = set(assigned)
        if assigned:
            self._pause(*assigned)
        if self._on_event is not None and assigned:
            self._on_event("assign", assigned)
        with self._lock:
            self._assigned |= assigned
            self.generations += 1

    def pending(self) -> bool:
        """Whether a rebalance has happened that the main loop has not taken yet."""
        with self._lock:
            return bool(self._assigned or self._dropped)

    def take(self) -> tuple[set[TopicPartition], set[TopicPartition]]:
        """(newly assigned, revoked or lost) since the last call; apply the revoked ones first."""
        with self._lock:
            assigned, dropped = self._assigned, self._dropped
            self._assigned, self._dropped = set(), set()
        return assigned, dropped
