"""The consumer's main loop against an in-memory stand-in for kafka-python (deterministic, no broker): exactly-once
effect, Kafka commits never ahead of the database, database outages, zombie members fenced, and records the
database refuses turned into dead letters. The real broker is exercised in test_kafka_service.py."""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NamedTuple

import pytest
from kafka import TopicPartition as TP
from kafka.partitioner.default import murmur2

from driftline.config import Config, Kafka
from driftline.kafka.consumer import LiveConsumer
from driftline.kafka.health import Backoff
from driftline.kafka.settings import resolve
from driftline.ingest.pipeline import Pipeline
from driftline.ingest.replay import replay
from driftline.storage.store import Store, StoreUnavailable
from helpers import refuse_database_writes_of
from kafka_service_support import assert_same_state, documents, make_events

TOPICS = {"predictions": "p", "outcomes": "o"}


class Rec(NamedTuple):
    offset: int
    value: bytes
    key: bytes | None = None


class FakeConsumer:
    """Enough of KafkaConsumer for the loop: partition logs, positions, pause/resume/seek, queued rebalances
    delivered inside poll() like kafka-python does, and commits checked against the database."""

    def __init__(self, logs: dict[TP, list[tuple[bytes | None, bytes]]], store: Store) -> None:
        self.logs, self.store = logs, store
        self.starts: dict[TP, int] = {}
        self.pos: dict[TP, int] = {}
        self.paused: set[TP] = set()
        self.assigned: set[TP] = set()
        self.listener: Any = None
        self.queued: list[tuple[str, set[TP]]] = []
        self.commits: list[dict[TP, int]] = []
        self.config = {"session_timeout_ms": 10000}
        self._coordinator = SimpleNamespace(coordinator_id="coordinator-1")

    def rebalance(self, new: set[TP]) -> None:
        self.queued += [("revoke", set(self.assigned)), ("assign", set(new))]

    def poll(self, timeout_ms: int = 0, max_records: int | None = None) -> dict[TP, list[Rec]]:
        while self.queued:
            kind, tps = self.queued.pop(0)
            if kind == "revoke":
                self.listener.on_partitions_revoked(tps)
                self.assigned -= tps
            else:
                self.assigned = set(tps)
                self.paused &= self.assigned
                self.listener.on_partitions_assigned(tps)
        out: dict[TP, list[Rec]] = {}
        budget = max_records or 500
        for tp in sorted(self.assigned - self.paused):
            start = self.pos.get(tp, 0)
            recs = [Rec(o, self.logs[tp][o][1], self.logs[tp][o][0])
                    for o in range(max(start, self.starts.get(tp, 0)), min(len(self.logs[tp]), start + budget))]
            if recs:
                out[tp] = recs
                self.pos[tp] = recs[-1].offset + 1
                budget -= len(recs)
        return out

    def pause(self, *tps: TP) -> None:
        self.paused |= set(tps)

    def resume(self, *tps: TP) -> None:
        self.paused -= set(tps)

    def seek(self, tp: TP, offset: int) -> None:
        self.pos[tp] = offset

    def commit_async(self, offsets: dict[TP, Any], callback: Any = None) -> None:
        for tp, om in offsets.items():  # the invariant: Kafka never ahead of the stored state
            assert om.offset <= self.store.positions(f"kafka:{tp.topic}").get(tp.partition, 0)
        self.commits.append({tp: om.offset for tp, om in offsets.items()})

    def commit(self, offsets: dict[TP, Any], timeout_ms: int | None = None) -> None:
        self.commit_async(offsets)

    def highwater(self, tp: TP) -> int:
        return len(self.logs[tp])

    def beginning_offsets(self, tps: list[TP], timeout_ms: int | None = None) -> dict[TP, int]:
        return {tp: self.starts.get(tp, 0) for tp in tps}

    def end_offsets(self, tps: list[TP], timeout_ms: int | None = None) -> dict[TP, int]:
        return {tp: len(self.logs[tp]) for tp in tps}

    def partitions_for_topic(self, topic: str) -> set[int]:
        return {tp.partition for tp in self.logs if tp.topic == topic}

    def metrics(self) -> dict[str, Any]:
        return {}

    def close(self, autocommit: bool = False, timeout_ms: int | None = None) -> None:
        self.listener.on_partitions_revoked(set(self.assigned))


def partitioned(records: list[tuple[str, bytes, bytes]], n: int = 2) -> dict[TP, list[tuple[bytes | None, bytes]]]:
    """Kafka's default partitioner (murmur2 of the key), so predictions and outcomes are co-partitioned."""
    logs: dict[TP, list[tuple[bytes | None, bytes]]] = {TP(TOPICS[k], p): [] for k in TOPICS for p in range(n)}
    for kind, key, value in records:
        logs[TP(TOPICS[kind], (murmur2(key) & 0x7FFFFFFF) % n)].append((key, value))
    return logs


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def member(store: Store, logs: dict[TP, list[bytes]], clock: Clock, batch: int = 300) -> tuple[LiveConsumer,
                                                                                                FakeConsumer]:
    settings = resolve(Kafka(predictions_topic="p", outcomes_topic="o", batch_max_records=batch), "fake:1", {})
    lc = LiveConsumer(Pipeline(Config(), store, clock=lambda: 1.9e9), settings, threading.Event(),
                      db_backoff=Backoff(1.0, 4.0), monotonic=clock, maintain_every_s=1e9)
    fake = FakeConsumer(logs, store)
    fake.listener = lc.attach(fake)
    return lc, fake


def replayed(tmp: Path, events: Any) -> dict[str, Any]:
    url = f"sqlite:///{tmp / 'replay.db'}"
    store = Store(url)
    store.migrate()
    pipe = Pipeline(Config(), store, clock=lambda: 1.9e9)
    replay(pipe, str(events.path))
    pipe.maintain()
    store.close()
    return documents(url)


def total(store: Store) -> int:
    return sum(sum(store.positions(f"kafka:{t}").values()) for t in TOPICS.values())


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Store, Any, dict[TP, list[bytes]]]:
    events = make_events(tmp_path, days=1.0, per_day=1500)
    store = Store(f"sqlite:///{tmp_path / 'live.db'}")
    store.migrate()
    return store, events, partitioned(events.records)


def test_loop_stores_every_record_once_and_commits_only_stored_positions(setup: Any, tmp_path: Path) -> None:
    store, events, logs = setup
    clock = Clock()
    lc, fake = member(store, logs, clock)
    fake.rebalance(set(logs))
    for _ in range(200):
        lc.step()
        clock.t += 1.1  # housekeeping (lag) runs once a second
        if total(store) == len(events.records):
            break
    lc.step()
    assert total(store) == len(events.records)
    assert fake.commits and fake.commits[-1] == {tp: len(v) for tp, v in logs.items() if tp in fake.commits[-1]}
    assert lc.ready() == (True, "kafka ok: 4 partitions assigned (p 2, o 2), lag 0")
    assert_same_state(documents(store.url), replayed(tmp_path, events))


def test_readiness_names_the_partitions_owned_per_topic(setup: Any) -> None:
    """Two members splitting two 2-partition topics each own 1 + 1: /readyz says so per topic. The total alone
    ("2 partitions assigned") read as if each member held both partitions of a topic; one member on both topics
    said 4, counting the two topics together."""
    store, events, logs = setup
    clock = Clock()
    a, fa = member(store, logs, clock)
    b, fb = member(store, logs, clock)
    fa.rebalance({tp for tp in logs if tp.partition == 0})
    fb.rebalance({tp for tp in logs if tp.partition == 1})
    for _ in range(3):
        a.step()
        b.step()
    for lc in (a, b):
        ok, why = lc.ready()
        assert ok and why.startswith("kafka ok: 2 partitions assigned (p 1, o 1)"), why


def test_database_outage_holds_the_batch_pauses_and_commits_nothing(setup: Any, tmp_path: Path) -> None:
    store, events, logs = setup
    clock = Clock()
    lc, fake = member(store, logs, clock)
    fake.rebalance(set(logs))
    for _ in range(6):  # each partition read once before any is stored (event-time alignment: kafka/alignment.py)
        lc.step()
        if total(store):
            break
    stored = total(store)
    assert stored > 0
    original = lc.pipeline.process_batch
    failures = [0]

    def down(*args: Any, **kwargs: Any) -> Any:
        failures[0] += 1
        raise StoreUnavailable("connection refused")

    lc.pipeline.process_batch = down  # type: ignore[method-assign]
    commits = len(fake.commits)
    for _ in range(6):
        lc.step()
        clock.t += 0.5
    assert lc.held is not None and fake.paused == fake.assigned
    assert len(fake.commits) == commits and total(store) == stored
    assert lc.ready() == (False, "database unavailable (connection refused): consuming paused, batch held")
    assert 2 <= failures[0] <= 3  # retried with backoff (1 s, 2 s), not on every loop
    lc.pipeline.process_batch = original  # type: ignore[method-assign]
    clock.t += 5
    for _ in range(200):
        lc.step()
        if total(store) == len(events.records):
            break
    assert lc.held is None and not fake.paused
    assert_same_state(documents(store.url), replayed(tmp_path, events))


def test_zombie_member_is_fenced_and_nothing_is_counted_twice(setup: Any, tmp_path: Path) -> None:
    """A was evicted without noticing yet; B owns the partitions and stores from the stored positions. A's next
    batches start below the stored positions: the store rejects them, A re-reads positions; final state exact."""
    store, events, logs = setup
    clock = Clock()
    a, fa = member(store, logs, clock, batch=200)
    b, fb = member(store, logs, clock, batch=150)
    fa.rebalance(set(logs))
    for _ in range(6):  # each partition read once before any is stored (event-time alignment: kafka/alignment.py)
        a.step()
        if total(store):
            break
    fb.rebalance(set(logs))  # the group moved everything to B; A has not been told
    for _ in range(60):  # B stores past A's position in every partition (B reads them in its own order)
        b.step()
        if all(b.expected.get(tp, 0) > a.expected.get(tp, 0) for tp in logs):
            break
    stale_before = total(store)
    for _ in range(6):  # A's batch starts where A left off, below B's stored positions → fenced
        a.step()  # (A's partitions ahead in event time, or given back, are paused until it reaches one of B's)
        if a.pending:
            break
    assert total(store) == stale_before and a.pending
    for _ in range(300):
        a.step()
        b.step()
        if total(store) == len(events.records):
            break
    assert total(store) == len(events.records)
    counters = store.counters()
    counted = sum(v for (n, _), v in counters.items() if n in ("events", "dead_letters"))
    assert counted == len(events.records)
    assert_same_state(documents(store.url), replayed(tmp_path, events))


def test_revocation_drops_held_records_of_revoked_partitions(setup: Any) -> None:
    store, events, logs = setup
    clock = Clock()
    lc, fake = member(store, logs, clock)
    fake.rebalance(set(logs))
    lc.step()
    original = lc.pipeline.process_batch
    lc.pipeline.process_batch = lambda *a, **k: (_ for _ in ()).throw(StoreUnavailable("down"))  # type: ignore
    for _ in range(6):  # each partition read once before a batch is stored (event-time alignment: alignment.py)
        lc.step()
        if lc.held:
            break
    assert lc.held
    keep = {tp for tp in logs if tp.partition == 0}
    fake.rebalance(keep)
    lc.pipeline.process_batch = original  # type: ignore[method-assign]
    clock.t += 10
    for _ in range(100):
        lc.step()
    stored = {(t, p): n for t in TOPICS.values() for p, n in store.positions(f"kafka:{t}").items()}
    for tp, log in logs.items():
        if tp in keep:
            assert stored[(tp.topic, tp.partition)] == len(log)
        else:
            assert stored.get((tp.topic, tp.partition), 0) < len(log)
    assert lc.owned == keep and set(lc.expected) == keep


@pytest.mark.postgres
def test_record_the_database_refuses_becomes_a_dead_letter(pg_url: str, tmp_path: Path, monkeypatch) -> None:
    """A record the database refuses (a DataError the decoder did not foresee; simulated here, since the known
    ones, over-long names and NUL characters, are now dead-lettered at decode) must not stop the stream."""
    refuse_database_writes_of(monkeypatch, "poison")
    events = make_events(tmp_path, days=0.3, per_day=1500)
    bad = b'{"type":"prediction","prediction_id":"poison","model":"fraud","ts":"2026-01-09T12:00:00Z","score":0.4}'
    records = list(events.records)
    records.insert(len(records) // 2, ("predictions", b"poison", bad))
    logs = partitioned(records)
    store = Store(pg_url)
    store.migrate()
    lc, fake = member(store, logs, Clock())
    fake.rebalance(set(logs))
    for _ in range(200):
        lc.step()
        if total(store) == len(records):
            break
    assert total(store) == len(records)
    letters = store.dead_letters(reason="store_rejected")
    assert len(letters) == 1 and letters[0]["raw"] == bad and letters[0]["source"] == "kafka:p"
    counted = sum(v for (n, _), v in store.counters().items() if n in ("events", "dead_letters"))
    assert counted == len(records)
    store.close()


def big_prediction(i: int, size: int) -> bytes:
    """A valid prediction of about `size` bytes, the bulk in a field driftline ignores."""
    return (b'{"type":"prediction","prediction_id":"big-%d","model":"fraud","ts":"2026-01-09T00:00:00Z",'
            b'"score":0.5,"features":{"amount":1.0},"note":"' % i + b"A" * size + b'"}')


def _big_events_consumer(tmp_path: Path, consumer: type[FakeConsumer]) -> tuple[str, Store, LiveConsumer, Any, Clock]:
    """(url, store, live consumer, fake client, clock) over 30 predictions of 300 kB with kafka.batch_max_bytes
    1 MiB, its partitions assigned: the set-up of the two large-event tests below."""
    url = f"sqlite:///{tmp_path / 'big.db'}"
    store = Store(url)
    store.migrate()
    logs = partitioned([("predictions", f"big-{i}".encode(), big_prediction(i, 300_000)) for i in range(30)])
    settings = resolve(Kafka(predictions_topic="p", outcomes_topic="o", batch_max_bytes=1 << 20), "fake:1", {})
    clock = Clock()
    lc = LiveConsumer(Pipeline(Config(), store, clock=lambda: 1.9e9), settings, threading.Event(),
                      db_backoff=Backoff(1.0, 4.0), monotonic=clock, maintain_every_s=1e9)
    fake = consumer(logs, store)
    fake.listener = lc.attach(fake)
    fake.rebalance(set(logs))
    return url, store, lc, fake, clock


def test_large_events_are_stored_once_in_batches_cut_at_max_bytes(tmp_path: Path) -> None:
    """SRE tryout: ~1 MB events were batched by record count only and `run` grew past 1 GB. With
    kafka.batch_max_bytes 1 MiB, 30 events of 300 kB go in batches of at most 4 (the 4th crosses the bound), the
    records a batch was cut before are stored by the next ones exactly once, and the stored bytes are counted for
    the byte-paced garbage collection."""
    from kafka_service_support import consistency

    url, store, lc, fake, clock = _big_events_consumer(tmp_path, FakeConsumer)
    collected: list[int] = []
    fed: list[int] = []
    lc.collector.collect = lambda: collected.append(lc.stored_batches)
    count_stored = lc.collector.stored
    lc.collector.stored = lambda nbytes: (fed.append(nbytes), count_stored(nbytes))[1]
    for _ in range(100):
        lc.step()
        lc.collector.collect_if_due()
        clock.t += 1.1
        if total(store) == 30:
            break
    assert total(store) == 30 and consistency(url, TOPICS) == (30, 30)
    assert lc.stored_batches >= 8  # 30 events, at most 4 a batch
    assert len(fed) == lc.stored_batches and sum(fed) == sum(len(big_prediction(i, 300_000)) for i in range(30))
    # every stored byte counted once; a collection each time 1 MiB piled up since the last check (once a step): the
    # count depends on how the overlapped polls cut the batches (3-4 events), at least one per 2 MiB + an event
    assert len(collected) >= sum(fed) // ((2 << 20) + 300_100)
    store.close()


def test_byte_collector_collects_once_per_bound_of_stored_bytes() -> None:
    from driftline.gc_tuning import ByteCollector

    runs: list[int] = []
    col = ByteCollector(100, collect=lambda: runs.append(1))
    col.stored(60)
    assert not col.collect_if_due() and runs == []
    col.stored(60)
    assert col.collect_if_due() and runs == [1] and col.pending == 0
    assert not col.collect_if_due() and runs == [1]


class CyclingConsumer(FakeConsumer):
    """A poll that, like kafka-python's, catches an exception inside: the exception's traceback holds the poll
    frame, which holds the exception (a cycle), and through the frames below it the batch being stored."""

    def poll(self, timeout_ms: int = 0, max_records: int | None = None) -> dict[TP, list[Rec]]:
        try:
            raise TimeoutError("timed out after 0 ms")
        except TimeoutError as err:
            caught = err  # noqa: F841 - the cycle
        return super().poll(timeout_ms, max_records)


def test_batches_left_in_reference_cycles_are_freed_per_stored_bytes(tmp_path: Path) -> None:
    """SRE tryout: `run` grew by ~1 MB per 1 MB event stored, never given back: each batch stayed alive in cyclic
    garbage (kafka-python's caught exceptions hold the frames that hold the batch) and the CLI's collector
    (gc_tuning: 250,000 allocations between collections) almost never ran on few, large events. The collector is
    switched off here (its allocation count never comes): what stays alive is bounded by kafka.batch_max_bytes."""
    import gc

    url, store, lc, fake, clock = _big_events_consumer(tmp_path, CyclingConsumer)
    gc.collect()
    gc.disable()
    try:
        for _ in range(100):
            lc.step()
            lc.collector.collect_if_due()  # what run() does between steps
            clock.t += 1.1
            if total(store) == 30:
                break
        alive = sum(1 for o in gc.get_objects() if type(o) is Rec and len(o.value) > 100_000)
    finally:
        gc.enable()
        store.close()
    assert total(store) == 30
    assert alive <= 8  # the last batches since the last collection (1 MiB ≈ 4 events), not all 30


def test_a_database_outage_skips_maintenance_with_one_warning_not_one_per_pass(tmp_path, caplog, monkeypatch) -> None:
    """On-call tryout: while the database was unreachable, every maintenance pass (30 s) logged a WARNING with the
    driver's whole message for the whole outage. Now the outage's first skipped pass warns once (first line of the
    error), repeats are held back for 5 minutes and its end is said once."""
    import logging
    store = Store(f"sqlite:///{tmp_path / 'm.db'}")
    store.migrate()
    clock = Clock()
    lc, _ = member(store, {TP(t, 0): [] for t in TOPICS.values()}, clock)
    calls = []

    def down(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        raise StoreUnavailable("connection refused\nIs the server running on that host?")

    real = lc.pipeline.maintain
    monkeypatch.setattr(lc.pipeline, "maintain", down)
    with caplog.at_level(logging.INFO, logger="driftline.kafka.consumer"):
        for _ in range(8):  # 8 passes 30 s apart: 4 minutes of outage
            lc.maintain()
            clock.t += 30.0
        monkeypatch.setattr(lc.pipeline, "maintain", real)
        lc.maintain()
        lc.maintain()
    lines = [r.getMessage() for r in caplog.records if r.name == "driftline.kafka.consumer"]
    warned = [m for m in lines if "maintenance" in m and "succeeded" not in m and ("fail" in m or "skipped" in m)]
    assert len(calls) == 8
    assert warned == ["maintenance (implicit negatives, expiry) failed: connection refused (logged again every 300s "
                      "while it keeps failing)"]
    assert [m for m in lines if "succeeded again" in m] == [
        "maintenance (implicit negatives, expiry) succeeded again after 8 failed attempts in 240s"]
    store.close()
