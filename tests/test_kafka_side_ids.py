"""Topic ids checked before each batch are asked on a connection of their own (log_ids.SideIds), not the consumer's:
a broker answers one connection's requests in order and parks a caught-up consumer's fetch for fetch_max_wait_ms,
so the per-batch metadata request waited behind it (0.3–0.5 s per batch at the head of the stream, measured with
benchmarks/run_process_bench.py). The real broker: the ids come from the side client while the consumer's own
metadata is not asked; a side client that fails falls back to the consumer's refresh and is retried later."""

from __future__ import annotations

import threading
import uuid
from types import SimpleNamespace
from typing import Any

import pytest

from driftline.config import Config, Kafka
from driftline.ingest.pipeline import Pipeline
from driftline.kafka.consumer import LiveConsumer
from driftline.kafka.log_ids import SideIds, current_ids
from driftline.kafka.settings import resolve
from driftline.storage.store import Store
from kafka_fixtures import create_topics, unique_name


class _Admin:
    """A stand-in admin client: describe_topics answers from `ids`, or raises while `fail` is set."""

    def __init__(self, ids: dict[str, Any]) -> None:
        self.ids, self.fail, self.closed = ids, False, 0

    def describe_topics(self, names: list[str]) -> list[dict[str, Any]]:
        if self.fail:
            raise OSError("connection refused")
        return [{"name": n, "topic_id": self.ids.get(n), "error_code": 0 if n in self.ids else 3} for n in names]

    def close(self) -> None:
        self.closed += 1


def test_side_ids_answer_from_their_own_client_and_fall_back_while_it_fails() -> None:
    now = [0.0]
    admin = _Admin({"p": uuid.UUID(int=7), "o": uuid.UUID(int=0)})
    opened: list[int] = []

    def open_admin() -> _Admin:
        opened.append(1)
        return admin

    side = SideIds(open_admin, lambda: now[0], retry_s=30.0)
    asked: list[int] = []
    consumer = SimpleNamespace(_client=SimpleNamespace(cluster=SimpleNamespace(topic_id={"p": uuid.UUID(int=9)}.get)),
                               topics=lambda: asked.append(1))
    assert current_ids(consumer, ["p", "o", "x"], True, side) == {"p": str(uuid.UUID(int=7)), "o": None, "x": None}
    assert asked == [] and opened == [1]  # the consumer's connection was not used
    admin.fail = True
    assert current_ids(consumer, ["p"], True, side) == {"p": str(uuid.UUID(int=9))}  # the consumer's refresh
    assert asked == [1] and admin.closed == 1
    admin.fail = False
    now[0] = 29.0
    assert current_ids(consumer, ["p"], True, side) == {"p": str(uuid.UUID(int=9))}  # not retried yet
    assert opened == [1] and asked == [1, 1]
    now[0] = 31.0
    assert current_ids(consumer, ["p"], True, side) == {"p": str(uuid.UUID(int=7))}  # reopened
    assert opened == [1, 1]
    assert current_ids(consumer, ["p"], False, side) == {"p": str(uuid.UUID(int=9))}  # no refresh: as last known
    side.close()
    assert admin.closed == 2


@pytest.mark.kafka
def test_the_batch_check_does_not_ask_on_the_consumers_connection(kafka_bootstrap: str, tmp_path: Any) -> None:
    """A real consumer whose fetch is parked (fetch_max_wait_ms 20 s, nothing to read): the ids before a batch come
    from the side client — the consumer's metadata is never asked — and equal the broker's ids."""
    from kafka import KafkaAdminClient

    topics = {"p": unique_name("predictions"), "o": unique_name("outcomes")}
    create_topics(kafka_bootstrap, topics.values(), 2)
    store = Store(f"sqlite:///{tmp_path / 'ids.db'}")
    store.migrate()
    section = Kafka(predictions_topic=topics["p"], outcomes_topic=topics["o"], group_id=unique_name("g"),
                    options={"session_timeout_ms": 6000, "heartbeat_interval_ms": 2000, "fetch_max_wait_ms": 20000})
    lc = LiveConsumer(Pipeline(Config(kafka=section), store, clock=lambda: 1.9e9),
                      resolve(section, kafka_bootstrap, {}), threading.Event())
    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    try:
        assert lc.connect()
        for _ in range(40):  # joined, positioned, fetching
            lc.step()
            if lc.expected and not lc.pending:
                break
        assert lc.expected and not lc.pending, "partitions not positioned"
        lc.step()
        cluster = lc.consumer._cluster
        asked: list[int] = []
        update = cluster.request_update
        cluster.request_update = lambda: (asked.append(1), update())[1]
        ids = lc.topic_ids(set(topics.values()), True)
        broker = {d["name"]: str(d["topic_id"]) for d in admin.describe_topics(list(topics.values()))}
        assert ids == broker and all(ids.values())
        assert asked == []
    finally:
        admin.close()
        lc.close()
        store.close()


class _OffsetsAdmin(_Admin):
    """A stand-in admin client that also answers log ends (list_partition_offsets), recording the isolation level."""

    def __init__(self, ends: dict[Any, int]) -> None:
        super().__init__({})
        self.ends, self.levels = ends, []  # type: list[Any]

    def list_partition_offsets(self, specs: dict[Any, Any], isolation_level: Any, timeout_ms: int) -> dict[Any, Any]:
        if self.fail:
            raise OSError("connection refused")
        self.levels.append(isolation_level)
        return {tp: SimpleNamespace(offset=self.ends[tp], timestamp=-1) for tp in specs if tp in self.ends}


def test_lag_end_offsets_come_from_the_side_client_and_fall_back_to_the_consumer_while_it_fails() -> None:
    """lag.end_offsets (the lag refresh every 5 s) asks the side client, with the consumer's isolation level; the
    consumer's own end_offsets (queued behind its parked fetch) only while the side client fails."""
    from kafka import TopicPartition

    from driftline.kafka.lag import end_offsets

    tps = [TopicPartition("p", 0), TopicPartition("p", 1)]
    admin = _OffsetsAdmin({tps[0]: 10, tps[1]: 20})
    now = [0.0]
    side = SideIds(lambda: admin, lambda: now[0], retry_s=30.0, isolation_level="read_uncommitted")
    asked: list[Any] = []
    consumer = SimpleNamespace(partitions_for_topic=lambda t: {0, 1} if t == "p" else None,
                               end_offsets=lambda wanted, timeout_ms: (asked.append(wanted), {tp: 1 for tp in wanted})[1])
    assert end_offsets(consumer, ["p", "gone"], side=side) == {tps[0]: 10, tps[1]: 20}
    assert asked == [] and admin.levels == ["read_uncommitted"]
    del admin.ends[tps[1]]  # an answer without a partition: the consumer's, not a KeyError out of the main loop
    assert end_offsets(consumer, ["p"], side=side) == {tps[0]: 1, tps[1]: 1}
    assert asked == [tps]
    now[0] = 31.0
    admin.ends[tps[1]] = 20
    admin.fail = True
    assert end_offsets(consumer, ["p"], side=side) == {tps[0]: 1, tps[1]: 1}
    assert asked == [tps, tps]


@pytest.mark.kafka
def test_the_lag_refresh_does_not_ask_on_the_consumers_connection(kafka_bootstrap: str, tmp_path: Any) -> None:
    """A real consumer whose fetch is parked (fetch_max_wait_ms 20 s, nothing to read): the lag refresh's log ends
    come from the side client — the consumer's end_offsets is never called — and equal the broker's. Before, the
    refresh waited behind the parked fetch on the main loop: 0.13–0.36 s between two batches of a backlog."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    topics = {"p": unique_name("predictions"), "o": unique_name("outcomes")}
    create_topics(kafka_bootstrap, topics.values(), 2)
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap)
    for i in range(5):
        producer.send(topics["p"], key=b"k%d" % i, value=b"not json", partition=i % 2)
    producer.flush()
    producer.close()
    store = Store(f"sqlite:///{tmp_path / 'lags.db'}")
    store.migrate()
    section = Kafka(predictions_topic=topics["p"], outcomes_topic=topics["o"], group_id=unique_name("g"),
                    options={"session_timeout_ms": 6000, "heartbeat_interval_ms": 2000, "fetch_max_wait_ms": 20000})
    lc = LiveConsumer(Pipeline(Config(kafka=section), store, clock=lambda: 1.9e9),
                      resolve(section, kafka_bootstrap, {}), threading.Event())
    try:
        assert lc.connect()
        for _ in range(40):  # joined, positioned, fetching
            lc.step()
            if lc.expected and not lc.pending:
                break
        assert lc.expected and not lc.pending, "partitions not positioned"
        lc.step()
        asked: list[Any] = []
        ends = lc.consumer.end_offsets
        lc.consumer.end_offsets = lambda *a, **k: (asked.append(a), ends(*a, **k))[1]
        lc._refresh_all_lags()
        assert asked == []
        reader = KafkaConsumer(bootstrap_servers=kafka_bootstrap, group_id=None, isolation_level="read_committed")
        try:
            broker = reader.end_offsets([TopicPartition(t, p) for t in topics.values() for p in (0, 1)])
        finally:
            reader.close()
        # the records produced, per partition: tansu lists a multi-record last batch's end short (ListOffsets
        # said 1 and 1 here), the side client's fetch check counts every record (kafka/log_ends.py)
        produced = {TopicPartition(topics["p"], 0): 3, TopicPartition(topics["p"], 1): 2,
                    TopicPartition(topics["o"], 0): 0, TopicPartition(topics["o"], 1): 0}
        assert lc.log_ends == produced and set(broker) == set(produced)
        assert all(broker[tp] <= n for tp, n in produced.items())  # listed: never more than the records
    finally:
        lc.close()
        store.close()
