"""Issue 14 parts 2-5 with real `driftline run` processes and the real tansu broker: a broker restarted empty
(offset reset: an error under `fail`, every new event stored exactly once under `earliest`), the dead-letter
topic under a 5 MB poison message and a crash before the copies were sent, wrong keys, and a member that owns
no partition (lag of every partition, /readyz)."""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from kafka.errors import TopicAlreadyExistsError

from kafka_fixtures import create_topics, start_tansu, unique_name, wait_for_kafka
from kafka_service_support import (
    Events, StoreProbe, assert_same_state, consistency, documents, make_events, produce, replay_documents,
    start_service, wait_until, write_config,
)
from test_kafka_faults import renamed
from test_kafka_service import _read_topic

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


def _with(config: Path, **kafka: Any) -> Path:
    data = yaml.safe_load(config.read_text())
    data["kafka"].update(kafka)
    config.write_text(yaml.safe_dump(data))
    return config


def _two_streams(bootstrap: str, tmp_path: Path, policy: str, old_days: float, new_days: float
                 ) -> tuple[dict[str, str], Path, Events, list[tuple[str, bytes, bytes]], str]:
    """(topics, config under `policy`, an old stream, a new one with new ids, database URL) on created topics."""
    topics = {"predictions": "predictions", "outcomes": "outcomes"}
    create_topics(bootstrap, topics.values(), 2)
    config = _with(write_config(tmp_path, topics, "driftline"), on_offset_reset=policy)
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    old = make_events(tmp_path / "old", days=old_days)
    new = renamed(make_events(tmp_path / "new", days=new_days, seed=5), "n-")
    return topics, config, old, new, f"sqlite:///{tmp_path / 'live.db'}"


def _restart_empty(broker: Any, tmp_path: Path) -> Any:
    """kill -9 of the broker behind the forwarder and a new, empty one in its place (same address)."""
    broker.process.kill()
    broker.process.wait(timeout=10)
    broker.forwarder.stop()
    fresh = start_tansu(advertised_port=broker.forwarder.port, log_dir=tmp_path)
    broker.forwarder.target = ("127.0.0.1", fresh.listen_port)
    broker.forwarder.start()
    wait_for_kafka(broker.bootstrap, process=fresh.process)
    return fresh


@dataclass
class _Run:
    """The service of a broker-reset test (replaced when the test restarts it), its store probe, and the brokers
    the test started in place of the first."""

    svc: Any
    probe: StoreProbe
    brokers: list[Any] = field(default_factory=list)


@contextmanager
def _old_stream_stored(tmp_path: Path, config: Path, db: str, bootstrap: str, topics: dict[str, str],
                       old: Events) -> Iterator[_Run]:
    """A service started on `config` that has stored the old stream; afterwards, whatever the test did, the
    service is killed, the probe closed and the brokers the test started killed."""
    run = _Run(start_service(tmp_path, config, db, bootstrap), StoreProbe(db, topics))
    try:
        produce(bootstrap, topics, old.records)
        wait_until(lambda: run.probe.done(old), 90, "old events stored", procs=(run.svc,))
        yield run
    finally:
        run.svc.kill()
        run.probe.close()
        for broker in run.brokers:
            broker.process.kill()


def _every_event_once(db: str, topics: dict[str, str], old: Events, new: list[tuple[str, bytes, bytes]],
                      tmp_path: Path) -> None:
    """Positions at the new logs' ends, every old and new event counted once: the state of a replay of both."""
    positions, counted = consistency(db, topics)
    assert positions == len(new) and counted == len(old.records) + len(new)
    both = tmp_path / "both.jsonl"
    both.write_bytes(b"".join(p + b"\n" for _, _, p in old.records + new))
    assert_same_state(documents(db), replay_documents(Events(both, old.records + new), tmp_path))


def test_broker_restarted_empty_is_an_error_then_earliest_stores_every_new_event_once(
        kafka_behind_forwarder: Any, tmp_path: Path) -> None:
    """kill -9 of the broker, restarted empty, topics recreated, fewer new events than the stored positions:
    under `fail` the service logs the reset, exports it and answers /readyz 503 without storing anything; a
    restart with `earliest` stores every event of the new log exactly once (state = replay of old + new)."""
    broker = kafka_behind_forwarder
    topics, config, old, new, db = _two_streams(broker.bootstrap, tmp_path, "fail", 1.0, 0.15)  # new: fewer
    with _old_stream_stored(tmp_path, config, db, broker.bootstrap, topics, old) as run:
        svc, probe = run.svc, run.probe
        before = probe.positions()
        run.brokers.append(_restart_empty(broker, tmp_path))
        try:
            create_topics(broker.bootstrap, topics.values(), 2)
        except TopicAlreadyExistsError:  # recreated first by a running client (tansu creates on metadata)
            pass
        produce(broker.bootstrap, topics, new)
        wait_until(lambda: "offset reset:" in svc.log(), 120, "offset reset logged", procs=(svc,))
        status, body = wait_until(lambda: (lambda r: r if r[0] == 503 and "offset reset" in r[1] else None)(
            svc.get("/readyz")), 30, "not ready: offset reset", procs=(svc,))
        assert "beyond the log end" in body
        _, metrics = wait_until(lambda: (lambda r: r if re.search(
            r'driftline_consumer_offset_reset_unresolved\{partition="\d",topic="predictions"\} 1\.0', r[1])
            else None)(svc.get("/metrics")), 30, "unresolved reset exported", procs=(svc,))
        assert re.search(r'driftline_consumer_offset_resets_total\{policy="fail",problem="beyond_end",'
                         r'topic="predictions"\} [12]\.0', metrics)
        # the stopped partitions' lag is their new log, not end − the old log's position (0 here: fourth tryout)
        new_predictions = sum(1 for kind, _, _ in new if kind == "predictions")

        def held_lag() -> float | None:
            found = re.findall(r'driftline_consumer_lag_messages\{partition="\d",topic="predictions"\} (\S+)',
                               svc.get("/metrics")[1])
            return sum(map(float, found)) or None

        assert 0 < wait_until(held_lag, 30, "lag of the stopped partitions", procs=(svc,)) <= new_predictions
        # nothing of the new log stored in the reset partitions and nothing skipped (tansu may recreate the topics
        # with more partitions on a client's metadata request first: those are new, read from their start)
        assert {k: v for k, v in probe.positions().items() if k in before} == before
        assert svc.terminate_when_stable() == 0  # see its docstring: tansu wedges a group left mid-rebalance
        run.svc = svc = start_service(tmp_path, _with(config, on_offset_reset="earliest"), db, broker.bootstrap,
                                      name="svc2")
        new_events = Events(tmp_path / "unused", new)
        wait_until(lambda: probe.done(new_events), 240, "every new event stored", procs=(svc,))
        wait_until(lambda: svc.get("/readyz")[0] == 200, 30, "ready again", procs=(svc,))
        assert "kafka.on_offset_reset is earliest: resuming at offset 0" in svc.log()
        # the old log's end, seen by the first service and recorded with the problem, gives the loss: none here
        # (the old stream was stored to its end), known although svc2 never saw the old log
        assert "records skipped: 0 of the log found, 0 of the previous log (never ingested: its end was" in svc.log()
        metrics = svc.get("/metrics")[1]
        for which in ("found", "previous"):
            assert (f'driftline_consumer_offset_reset_skipped_records_total{{log="{which}",topic="predictions"}} 0.0'
                    in metrics)
        assert svc.terminate() == 0
    _every_event_once(db, topics, old, new, tmp_path)


def test_broker_restarted_empty_and_refilled_past_the_stored_positions_loses_nothing(
        kafka_behind_forwarder: Any, tmp_path: Path) -> None:
    """Second SRE tryout: after a broker reset whose new log had refilled up to the stored position before
    driftline looked, offsets alone looked valid and the new log's first records were skipped. More new events
    than the stored positions, produced while the service waits for the broker: the topic ids stored with the
    positions tell the new logs apart, and under `earliest` every new event is stored exactly once."""
    broker = kafka_behind_forwarder
    topics, config, old, new, db = _two_streams(broker.bootstrap, tmp_path, "earliest", 0.3, 1.0)  # new: more
    with _old_stream_stored(tmp_path, config, db, broker.bootstrap, topics, old) as run:
        svc, probe = run.svc, run.probe
        before = probe.positions()
        os.kill(svc.proc.pid, signal.SIGSTOP)  # driftline does not look until the new logs have refilled
        try:
            run.brokers.append(_restart_empty(broker, tmp_path))
            create_topics(broker.bootstrap, topics.values(), 2)
            produce(broker.bootstrap, topics, new)
        finally:
            os.kill(svc.proc.pid, signal.SIGCONT)
        new_events = Events(tmp_path / "unused", new)
        wait_until(lambda: probe.done(new_events), 240, "every new event stored", procs=(svc,))
        assert all(probe.positions()[k] > v for k, v in before.items())
        assert "belongs to a log that was replaced" in svc.log()
        assert svc.terminate() == 0
    _every_event_once(db, topics, old, new, tmp_path)


def test_topics_recreated_on_the_same_broker_while_the_consumer_was_paused_lose_nothing(
        kafka_behind_forwarder: Any, tmp_path: Path) -> None:
    """Third SRE tryout: topics deleted and recreated on a broker that stayed up, refilled past the stored positions
    while driftline was paused (SIGSTOP; a database outage pauses its partitions the same way). No fetch failed, so
    kafka-python's metadata kept the old topic ids for minutes and the new logs' first records were skipped
    (under `fail`, stored). The ids are now asked for before every batch: every new event is stored once."""
    from kafka import KafkaAdminClient

    kafka_bootstrap = kafka_behind_forwarder.bootstrap  # a broker of its own: its topics are deleted
    topics, config, old, new, db = _two_streams(kafka_bootstrap, tmp_path, "earliest", 0.3, 1.0)
    with _old_stream_stored(tmp_path, config, db, kafka_bootstrap, topics, old) as run:
        svc = run.svc
        os.kill(svc.proc.pid, signal.SIGSTOP)
        try:
            admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap)
            admin.delete_topics(list(topics.values()))
            admin.close()
            wait_until(lambda: not set(topics.values()) & set(_topics(kafka_bootstrap)), 30, "topics deleted")
            create_topics(kafka_bootstrap, topics.values(), 2)
            produce(kafka_bootstrap, topics, new)
        finally:
            os.kill(svc.proc.pid, signal.SIGCONT)
        wait_until(lambda: run.probe.done(Events(tmp_path / "unused", new)), 240, "every new event stored",
                   procs=(svc,))
        assert "belongs to a log that was replaced" in svc.log()
        assert svc.terminate() == 0
    _every_event_once(db, topics, old, new, tmp_path)


def _topics(bootstrap: str) -> set[str]:
    from kafka import KafkaConsumer

    c = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        return set(c.topics())
    finally:
        c.close()


def test_dead_letter_topic_survives_a_5mb_poison_and_a_crash_before_sending(kafka_bootstrap: str,
                                                                           tmp_path: Path) -> None:
    """Crash between the state transaction and the dead-letter copies: the copies are re-sent from the database
    at the next start. A 5 MB poison message does not crash the service: its copy is cut to
    kafka.dead_letter_max_bytes with an original_size header. Wrong keys become key_mismatch/key_missing."""
    from kafka import KafkaProducer

    topics = {"predictions": unique_name("predictions"), "outcomes": unique_name("outcomes")}
    dlt = unique_name("dead")
    create_topics(kafka_bootstrap, [*topics.values(), dlt], 2)
    config = _with(write_config(tmp_path, topics, unique_name("g"), dead_letter_topic=dlt),
                   dead_letter_max_bytes=65536)
    events = make_events(tmp_path, days=0.3)
    poison = [r for r in events.records if r[1].startswith(b"poison-")]
    db = f"sqlite:///{tmp_path / 'live.db'}"
    probe = StoreProbe(db, topics)
    svc = start_service(tmp_path, config, db, kafka_bootstrap, fault="after_store_commit:1")
    try:
        produce(kafka_bootstrap, topics, poison)
        wait_until(lambda: svc.proc.poll() is not None, 60, "killed after the first stored batch", procs=(svc,))
        assert probe.total() > 0
        svc = start_service(tmp_path, config, db, kafka_bootstrap, name="svc2")
        producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, max_request_size=6_000_000)
        big = b"{" + b"x" * 5_000_000
        producer.send(topics["predictions"], key=b"big", value=big)
        wrong = [r for r in events.records if r[0] == "outcomes" and not r[1].startswith(b"poison-")][:2]
        producer.send(topics["outcomes"], key=b"not-the-id", value=wrong[0][2])
        producer.send(topics["outcomes"], key=None, value=wrong[1][2])
        producer.flush(timeout=60)
        producer.close()
        rest = [r for r in events.records if r not in poison and r not in wrong]
        produce(kafka_bootstrap, topics, rest)
        n = len(events.records) + 1
        wait_until(lambda: probe.total() == n, 90, "every record stored", procs=(svc,))
        _, metrics = wait_until(lambda: (lambda r: r if "driftline_dead_letter_topic_sent_total 7.0" in r[1]
                                         else None)(svc.get("/metrics")), 30, "7 copies sent", procs=(svc,))
        assert 'driftline_dead_letters_total{reason="key_mismatch"} 1.0' in metrics
        assert 'driftline_dead_letters_total{reason="key_missing"} 1.0' in metrics
        assert "driftline_dead_letter_topic_truncated_total 1.0" in metrics
        assert svc.terminate() == 0  # the service never exited on the 5 MB message
    finally:
        svc.kill()
        probe.close()
    letters = _read_topic(kafka_bootstrap, dlt, 7)
    by_reason: dict[str, list[tuple[dict[str, str], bytes]]] = {}
    for headers, value in letters:
        by_reason.setdefault(headers["reason"], []).append((headers, value))
    assert sorted((r, len(v)) for r, v in by_reason.items()) == [
        ("invalid_json", 1), ("key_mismatch", 1), ("key_missing", 1), ("label_invalid", 1), ("not_an_object", 1),
        ("score_out_of_range", 1), ("too_large", 1)]  # the 5 MB message is over limits.max_event_bytes
    crashed = [h for h, _ in letters if h.get("copy") == "database"]
    assert len(crashed) >= 1  # the copies of the crashed batch came from the database
    (cut_headers, cut_value), = [x for x in by_reason["too_large"] if "original_size" in x[0]]
    assert cut_headers["original_size"] == str(len(big)) and len(cut_value) == 65536
    assert consistency(db, topics) == (n, n)


@pytest.mark.postgres
def test_member_without_partitions_exports_every_lag_and_is_not_ready(kafka_bootstrap: str, pg_url: str,
                                                                      tmp_path: Path) -> None:
    """One partition per topic, two processes: one owns both partitions, the other none. The idle one exports
    the lag of both partitions (from the stored positions and the log ends) and answers /readyz 503 once past
    kafka.unassigned_grace; after kill -9 of the owner it takes over and stores everything exactly once."""
    topics = {"predictions": unique_name("predictions"), "outcomes": unique_name("outcomes")}
    create_topics(kafka_bootstrap, topics.values(), 1)
    config = _with(write_config(tmp_path, topics, unique_name("g")), unassigned_grace="3s")
    events = make_events(tmp_path, days=0.5)
    probe = StoreProbe(pg_url, topics)
    a = start_service(tmp_path, config, pg_url, kafka_bootstrap, name="a")
    b = a
    try:
        wait_until(lambda: "resuming at stored positions" in a.log(), 60, "A positioned", procs=(a,))
        b = start_service(tmp_path, config, pg_url, kafka_bootstrap, name="b")
        def idle_and_owner() -> Any:
            states = [(s, *s.get("/readyz")) for s in (a, b)]
            idle = [s for s, code, body in states if code == 503 and "no partition assigned" in body]
            owner = [s for s, code, body in states if code == 200 and "2 partitions assigned (" in body]
            return (idle[0], owner[0]) if idle and owner else None

        idle, owner = wait_until(idle_and_owner, 120, "one owner, one idle member", procs=(a, b))
        half = len(events.records) // 2
        produce(kafka_bootstrap, topics, events.records[:half])
        wait_until(lambda: probe.total() == half, 60, "first half stored", procs=(a, b))
        owner.kill()
        produce(kafka_bootstrap, topics, events.records[half:])

        def lags() -> dict[str, float] | None:
            _, body = idle.get("/metrics")
            found = {t: float(v) for t, v in re.findall(
                r'driftline_consumer_lag_messages\{partition="0",topic="([^"]+)"\} (\S+)', body)}
            return found if set(found) == set(topics.values()) and sum(found.values()) > 0 else None

        seen = wait_until(lags, 30, "lag of partitions the idle member does not own", procs=(idle,))
        assert sum(seen.values()) <= len(events.records) - half
        wait_until(lambda: probe.done(events), 120, "every record stored by the survivor", procs=(idle,))
        wait_until(lambda: idle.get("/readyz")[0] == 200, 30, "survivor ready", procs=(idle,))
        assert idle.terminate() == 0
    finally:
        a.kill()
        b.kill()
        probe.close()
    assert consistency(pg_url, topics) == (len(events.records), len(events.records))
    assert_same_state(documents(pg_url), replay_documents(events, tmp_path))
