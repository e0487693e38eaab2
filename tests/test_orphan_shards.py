"""Join rows of partitions the topics no longer have are still maintained by `driftline run` (SRE tryout: a broker
reset, the topics recreated with 2 partitions instead of 4, and the 31,578 predictions of partitions 2-3 were never
expired again: every member maintained only the partitions it owned, so `metrics` kept counting them unlabelled long
after the horizon, and under `implicit_negative_after` they would never have matured)."""

from __future__ import annotations

import logging
import math
from types import SimpleNamespace

from kafka import TopicPartition

from driftline.config import from_dict
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.kafka import partition_ops
from driftline.kafka.upkeep import Upkeep, maintenance_streak
from driftline.storage.store import Store

from helpers import outcome, pred

DAY = 86400.0
T0 = 1_790_000_000.0
TOPICS = ("predictions", "outcomes")


class _Cluster:
    """kafka-python's cluster metadata as the client last saw it (None: a topic it knows nothing of)."""

    def __init__(self, parts: dict[str, set[int] | None]) -> None:
        self.parts = parts

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return self.parts.get(topic)


class _Member(Upkeep):
    """The part of a LiveConsumer its maintenance reads: it owns partition 0 of both topics."""

    def __init__(self, pipeline: Pipeline, parts: dict[str, set[int] | None]) -> None:
        self.pipeline, self.maintain_every_s, self.expiring, self.member = pipeline, 30.0, False, "m"
        self.expected = {TopicPartition(t, 0): 0 for t in TOPICS}
        self.consumer = SimpleNamespace(_cluster=_Cluster(parts))
        self.settings = SimpleNamespace(topics=TOPICS)
        self.maintain_failing, self.orphans = maintenance_streak(lambda: 0.0), []

    def _maintenance_ceiling(self) -> float:
        return math.inf  # no partition with records left (alignment.py)


def _four_partitions(tmp_path) -> tuple[Store, Pipeline]:
    """A store written from 4 partitions: an old prediction on each, an outcome waiting on partition 3, then
    one new prediction on partition 0 that moves the watermark 100 days on (past the 90-day horizon)."""
    store = Store(f"sqlite:///{tmp_path / 'live.db'}", clock=lambda: T0 + 200 * DAY)
    store.migrate()
    pipe = Pipeline(from_dict({}), store, clock=lambda: T0 + 200 * DAY)
    pipe.process_batch([RawRecord("predictions", p, 0, pred(f"old-{p}", 0.3, T0 + p), "prediction")
                        for p in range(4)] + [RawRecord("outcomes", 3, 0, outcome("gone", 1, T0 + 5), "outcome")])
    pipe.process_batch([RawRecord("predictions", 0, 1, pred("new", 0.7, T0 + 100 * DAY), "prediction")])
    return store, pipe


def _ids(store: Store) -> tuple[list[str], list[str]]:
    """Ids of the stored prediction and outcome join rows."""
    with store.read() as conn:
        return tuple(sorted(r[0] for r in conn.exec_driver_sql(f"SELECT prediction_id FROM {t}"))  # type: ignore
                     for t in ("predictions", "outcomes"))


def test_shards_no_partition_has_are_expired_by_every_member(tmp_path, caplog) -> None:
    store, pipe = _four_partitions(tmp_path)
    assert store.stored_shards() == [0, 1, 2, 3]
    member = _Member(pipe, {"predictions": {0, 1}, "outcomes": {0, 1}})  # recreated with 2 partitions
    caplog.set_level(logging.INFO, "driftline.kafka.consumer")
    member.maintain()
    # 2 and 3 expired with its own 0 (the outcome waiting on 3 too); 1 is the member's that owns partition 1 now
    assert _ids(store) == (["new", "old-1"], [])
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and warnings[0].startswith("join rows in shards [2, 3], which no partition of "
                                                         "predictions, outcomes has now")
    caplog.clear()
    member.maintain()  # the same shards again: no second warning
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]
    store.close()


def test_nothing_is_taken_for_an_orphan_while_a_topic_is_unknown(tmp_path) -> None:
    store, pipe = _four_partitions(tmp_path)
    member = _Member(pipe, {"predictions": {0, 1}, "outcomes": None})  # no metadata for outcomes yet
    member.maintain()
    assert _ids(store) == (["new", "old-1", "old-2", "old-3"], ["gone"])  # its own partition only, as before
    assert member.orphans == []
    store.close()


def test_known_partitions_never_asks_the_broker() -> None:
    consumer = SimpleNamespace(_cluster=_Cluster({"p": {0, 1}, "q": set()}))
    assert partition_ops.known_partitions(consumer, "p") == {0, 1}
    assert partition_ops.known_partitions(consumer, "q") is None  # no partitions known: nothing to go by
    assert partition_ops.known_partitions(consumer, "r") is None
    assert partition_ops.known_partitions(None, "p") is None  # a client being rebuilt
