"""Both topics, co-partitioned: a prediction and its outcome (same key) must land on the same partition index.

Always describe before subscribing or producing: some brokers (tansu, Kafka with auto-create on) silently create a
missing topic with their default partition count on first use.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .settings import KafkaSettings


class TopicsError(RuntimeError):
    """The topics are missing or not co-partitioned; the message says what to do, `missing` names the missing ones."""

    def __init__(self, message: str, missing: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.missing = tuple(missing)


def describe(admin: Any, names: Sequence[str]) -> dict[str, int | None]:
    """Partition count per topic name; None when the topic does not exist (describing never creates it)."""
    found = {t["name"]: len(t["partitions"]) for t in admin.describe_topics(list(names))
             if t.get("error_code", 0) == 0 and t.get("partitions")}
    return {n: found.get(n) for n in names}


def copartition_problem(counts: dict[str, int | None], bootstrap: str = "HOST:PORT") -> str | None:
    """Why these topics cannot be consumed together (missing, or different partition counts), else None; the
    command it gives names `bootstrap` (the broker asked), as /readyz's reason for topics a reset lost does."""
    missing = [n for n, c in counts.items() if c is None]
    if missing:
        return (f"topic(s) {', '.join(missing)} do not exist: create them with the same partition count "
                f"(`driftline topics create --kafka {bootstrap} --partitions N`)")
    if len(set(counts.values())) > 1:
        shown = ", ".join(f"{n} has {c} partitions" for n, c in counts.items())
        return (f"topics are not co-partitioned ({shown}): a prediction and its outcome (same prediction_id key) "
                "would land on different partition numbers and could be joined by different consumers. "
                "Recreate them with the same partition count (`driftline topics create --partitions N`).")
    return None


def check(admin: Any, settings: KafkaSettings) -> int:
    """The common partition count of both topics; TopicsError when missing or not co-partitioned."""
    counts = describe(admin, settings.topics)
    problem = copartition_problem(counts, settings.bootstrap)
    if problem:
        raise TopicsError(problem, [n for n, c in counts.items() if c is None])
    return int(next(iter(counts.values())))  # type: ignore[arg-type]


def create(admin: Any, settings: KafkaSettings, partitions: int | None, replication_factor: int = 1
           ) -> tuple[int, list[str]]:
    """Create whichever of the two topics is missing, with matching counts; returns (count, created names).

    An existing topic fixes the count (a different --partitions is an error); none existing uses `partitions`
    (default 6). Existing topics that differ raise TopicsError: partitions are never changed silently.
    """
    counts = describe(admin, settings.topics)
    existing = {n: c for n, c in counts.items() if c is not None}
    if len(set(existing.values())) > 1:
        raise TopicsError(copartition_problem(counts) or "topics differ")
    if existing:
        have = next(iter(existing.values()))
        if partitions is not None and partitions != have:
            names = ", ".join(f"{n} ({c})" for n, c in existing.items())
            raise TopicsError(f"existing topic(s) {names} have {have} partitions, not {partitions}: partition "
                              f"counts are never changed here; use --partitions {have} or recreate the topics")
        n = int(have)  # type: ignore[arg-type]
    else:
        n = partitions if partitions is not None else 6
    if n < 1:
        raise TopicsError("--partitions must be at least 1")
    todo = [name for name, c in counts.items() if c is None]
    if settings.dead_letter_topic and describe(admin, [settings.dead_letter_topic])[settings.dead_letter_topic] is None:
        todo.append(settings.dead_letter_topic)
    if todo:
        admin.create_topics({name: {"num_partitions": n, "replication_factor": replication_factor}
                             for name in todo}, wait_for_metadata=True)
    return check(admin, settings), todo


def open_admin(settings: KafkaSettings, max_request_ms: int | None = None) -> Any:
    """A KafkaAdminClient (raises kafka.errors.KafkaTimeoutError when the broker cannot be reached); its requests
    time out after at most `max_request_ms` when given."""
    from kafka import KafkaAdminClient

    kwargs = settings.admin_kwargs()
    if max_request_ms is not None:
        kwargs["request_timeout_ms"] = min(int(kwargs.get("request_timeout_ms", max_request_ms)), max_request_ms)
    return KafkaAdminClient(**kwargs)
