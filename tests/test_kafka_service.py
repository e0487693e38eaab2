"""The live service against a real Kafka-protocol broker (tansu): end to end, crashes, outages, scale-out.

Every test compares the service's final state with `driftline replay` of the same events written to a file:
`metrics --json` documents (7d and 28d windows, variant B), counters and dead letters, exact for counts and
equal to 1e-9 relative for float sums (their value depends on the order events were added).
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
import time
from typing import Any
from pathlib import Path

import pytest

from kafka_fixtures import create_topics, unique_name
from kafka_service_support import (
    POISON_REASONS, SIM_END, ServiceProcess, StoreProbe, assert_same_state, consistency, documents, make_events, produce,
    replay_documents, start_service, wait_until, with_poison, write_config,
)

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


def _topics(prefix: str = "") -> dict[str, str]:
    return {"predictions": unique_name(prefix + "predictions"), "outcomes": unique_name(prefix + "outcomes")}


def _flat(text: str) -> str:
    """Console output with rich's line wrapping undone."""
    return " ".join(text.split())


def _assignments(log: str) -> list[set[str]]:
    """Every 'partitions assigned: a[0], b[0]' set in a service log, in order."""
    return [set(m.group(1).split(", ")) for m in re.finditer(r"partitions assigned: (.+)", log)]


def _group_offsets(bootstrap: str, group: str) -> int:
    """Sum of the offsets committed to Kafka by the group (advisory copies of the stored positions)."""
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        offsets = admin.list_group_offsets(group)[group]
        return sum(max(0, o.offset) for o in offsets.values())
    finally:
        admin.close()


def test_end_to_end_matches_replay_with_dead_letter_topic(kafka_bootstrap: str, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """`driftline simulate --kafka --rate` → `driftline run` equals replay of `simulate --out` of the same stream;
    poison messages go to the database and to the dead-letter topic with reason/partition/offset headers; ops
    metrics and readiness are served; SIGTERM stops it cleanly within seconds."""
    from driftline.cli import main

    topics, group, dlt = _topics(), unique_name("g"), unique_name("dead")
    config = write_config(tmp_path, topics, group, dead_letter_topic=dlt)
    base = ["--config", str(config)]
    assert main([*base, "topics", "create", "--kafka", kafka_bootstrap, "--partitions", "2"]) == 0
    assert "2 partitions each" in _flat(capsys.readouterr().out)
    sim = ["simulate", "--days", "2", "--per-day", "3000", "--seed", "11", "--end", SIM_END]
    assert main([*base, *sim, "--out", str(tmp_path / "events.jsonl")]) == 0
    db = f"sqlite:///{tmp_path / 'live.db'}"
    from driftline.kafka import producer as producer_module

    paced: list[tuple[float | None, int]] = []

    class RecordingPacer(producer_module.Pacer):
        """The real pacer (its timing is unit-tested with a fake clock), recording the rate and the events paced."""

        def __init__(self, rate: float | None, *args: Any, **kwargs: Any) -> None:
            super().__init__(rate, *args, **kwargs)
            paced.append((rate, 0))

        def wait(self, *args: Any, **kwargs: Any) -> Any:
            paced[-1] = (paced[-1][0], paced[-1][1] + 1)
            return super().wait(*args, **kwargs)

    monkeypatch.setattr(producer_module, "Pacer", RecordingPacer)
    svc = start_service(tmp_path, config, db, kafka_bootstrap)
    probe = StoreProbe(db, topics)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        try:
            assert main([*base, *sim, "--kafka", kafka_bootstrap, "--rate", "4000"]) == 0
        finally:
            for s, h in handlers.items():
                signal.signal(s, h)
        produced = _flat(capsys.readouterr().err)
        events = with_poison(tmp_path / "events.jsonl")
        assert f"produced {len(events.records) - len(POISON_REASONS) - 1:,} events" in produced
        assert paced == [(4000.0, len(events.records) - len(POISON_REASONS) - 1)]  # --rate reaches the pacer
        produce(kafka_bootstrap, topics, events.records[-len(POISON_REASONS) - 1:])
        wait_until(lambda: probe.done(events), 60, "every record stored", procs=(svc,))
        status, body = wait_until(lambda: (lambda r: r if r[0] == 200 else None)(svc.get("/readyz")), 15,
                                  "ready", procs=(svc,))
        assert f"kafka ok: 4 partitions assigned ({topics['predictions']} 2, {topics['outcomes']} 2)" in body
        _, metrics = wait_until(lambda: (lambda r: r if len(re.findall(
            r'driftline_consumer_lag_messages\{partition="\d",topic="[^"]+"\} ', r[1])) == 4 else None)(
            svc.get("/metrics")), 30, "the lag series of every partition", procs=(svc,))
        lags = re.findall(r'driftline_consumer_lag_messages\{partition="\d",topic="[^"]+"\} (\S+)', metrics)
        assert len(lags) == 4
        total = re.search(r"driftline_batch_duration_seconds_count (\S+)", metrics)
        assert total is not None and float(total.group(1)) >= len(events.records) / 400
        consumed = dict(re.findall(r'driftline_consumer_records_total\{topic="([^"]+)"\} (\S+)', metrics))
        assert {t: float(v) for t, v in consumed.items()} == {
            topics[k]: float(events.count(k)) for k in ("predictions", "outcomes")}
        # records per stored batch: one observation per batch, summing to every record, none above the bound (400)
        assert f"driftline_batch_records_count {total.group(1)}" in metrics
        assert f"driftline_batch_records_sum {float(len(events.records))}" in metrics
        assert f'driftline_batch_records_bucket{{le="500.0"}} {total.group(1)}' in metrics
        assert 'driftline_dead_letters_total{reason="invalid_json"} 1.0' in metrics
        assert svc.terminate(timeout=30) == 0  # SIGTERM stops it (a hang fails here)
    finally:
        svc.kill()
        probe.close()
    assert "consumer closed" in svc.log()
    assert consistency(db, topics)[0] == consistency(db, topics)[1] == len(events.records)
    assert_same_state(documents(db), replay_documents(events, tmp_path))
    letters = _read_topic(kafka_bootstrap, dlt, len(POISON_REASONS))
    reasons = sorted(h["reason"] for h, _ in letters)
    assert reasons == sorted(POISON_REASONS)
    for headers, value in letters:
        assert headers["topic"] in topics.values() and headers["partition"] in ("0", "1")
        assert int(headers["offset"]) >= 0 and value


def _read_topic(bootstrap: str, topic: str, n: int) -> list[tuple[dict[str, str], bytes]]:
    from kafka import KafkaConsumer

    c = KafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False,
                      group_id=None)
    out: list[tuple[dict[str, str], bytes]] = []
    try:
        deadline = time.monotonic() + 20
        while len(out) < n and time.monotonic() < deadline:
            for recs in c.poll(timeout_ms=500).values():
                out += [({k: v.decode() for k, v in r.headers}, r.value) for r in recs]
    finally:
        c.close()
    return out


def test_crash_mid_batch_and_between_store_and_kafka_commit(kafka_bootstrap: str, tmp_path: Path) -> None:
    """kill -9 inside the store transaction, then between the store commit and the Kafka commit; after each
    restart nothing is lost or counted twice, and the final state equals replay."""
    topics, group = _topics(), unique_name("g")
    create_topics(kafka_bootstrap, topics.values(), 2)
    config = write_config(tmp_path, topics, group)
    events = make_events(tmp_path)
    produce(kafka_bootstrap, topics, events.records)
    db = f"sqlite:///{tmp_path / 'live.db'}"

    first = start_service(tmp_path, config, db, kafka_bootstrap, name="mid_batch", fault="mid_batch:3")
    assert first.proc.wait(timeout=60) == -9, first.log()
    assert "killing the process at mid_batch #3" in first.log()
    stored, counted = consistency(db, topics)
    assert 0 < stored == counted < len(events.records)  # the 3rd transaction was rolled back whole

    second = start_service(tmp_path, config, db, kafka_bootstrap, name="after_commit",
                           fault="after_store_commit:3")
    assert second.proc.wait(timeout=60) == -9, second.log()
    assert "killing the process at after_store_commit #3" in second.log()
    stored2, counted2 = consistency(db, topics)
    assert stored < stored2 == counted2 < len(events.records)
    assert _group_offsets(kafka_bootstrap, group) < stored2  # Kafka's offsets lag the database's positions

    last = start_service(tmp_path, config, db, kafka_bootstrap, name="final")
    probe = StoreProbe(db, topics)
    try:
        wait_until(lambda: probe.done(events), 60, "every record stored", procs=(last,))
        assert last.terminate() == 0
    finally:
        last.kill()
        probe.close()
    assert consistency(db, topics) == (len(events.records), len(events.records))
    assert_same_state(documents(db), replay_documents(events, tmp_path))


def test_crash_during_rebalance_then_other_member_takes_over(kafka_bootstrap: str, tmp_path: Path) -> None:
    """A consumes; B joins; A is killed inside its revocation callback (mid-rebalance); B gets every partition,
    resumes at the stored positions and the final state equals replay."""
    topics, group = _topics(), unique_name("g")
    create_topics(kafka_bootstrap, topics.values(), 2)
    config = write_config(tmp_path, topics, group)
    events = make_events(tmp_path)
    half = len(events.records) // 2
    produce(kafka_bootstrap, topics, events.records[:half])
    db = f"sqlite:///{tmp_path / 'live.db'}"
    a = start_service(tmp_path, config, db, kafka_bootstrap, name="a", fault="revoke:1")
    probe = StoreProbe(db, topics)
    b = None
    try:
        wait_until(lambda: probe.total() == half, 60, "first half stored by A", procs=(a,))
        b = start_service(tmp_path, config, db, kafka_bootstrap, name="b")
        assert a.proc.wait(timeout=60) == -9, a.log()
        assert "killing the process at revoke #1" in a.log()
        produce(kafka_bootstrap, topics, events.records[half:])
        wait_until(lambda: probe.done(events), 90, "every record stored by B", procs=(a, b))
        assert _assignments(b.log())[-1] == {f"{t}[{p}]" for t in topics.values() for p in (0, 1)}
        assert b.terminate() == 0
    finally:
        a.kill()
        if b is not None:
            b.kill()
        probe.close()
    assert consistency(db, topics) == (len(events.records), len(events.records))
    assert_same_state(documents(db), replay_documents(events, tmp_path))


@pytest.mark.postgres
def test_two_processes_split_partitions_and_survive_one_killed(kafka_bootstrap: str, pg_url: str,
                                                               tmp_path: Path) -> None:
    """Two `driftline run` in one group on PostgreSQL split the partitions co-partitioned; one is killed -9, the
    other takes its partitions over; the merged state equals a single replay."""
    topics, group = _topics(), unique_name("g")
    create_topics(kafka_bootstrap, topics.values(), 2)
    config = write_config(tmp_path, topics, group)
    events = make_events(tmp_path)
    half = len(events.records) // 2
    a = start_service(tmp_path, config, pg_url, kafka_bootstrap, name="a")
    probe = StoreProbe(pg_url, topics)
    b = None
    try:
        wait_until(lambda: "resuming at stored positions" in a.log(), 60, "A positioned", procs=(a,))
        b = start_service(tmp_path, config, pg_url, kafka_bootstrap, name="b")

        def split() -> bool:
            la, lb = _assignments(a.log()), _assignments(b.log())  # type: ignore[union-attr]
            return bool(lb) and len(la) >= 2 and len(la[-1]) == len(lb[-1]) == 2
        wait_until(split, 60, "partitions split between A and B", procs=(a, b))
        owned_a, owned_b = _assignments(a.log())[-1], _assignments(b.log())[-1]
        assert owned_a.isdisjoint(owned_b) and len(owned_a | owned_b) == 4
        for owned in (owned_a, owned_b):  # co-partitioned: the same partition number on both topics
            assert len({x.rsplit("[", 1)[1] for x in owned}) == 1
        produce(kafka_bootstrap, topics, events.records[:half])
        wait_until(lambda: probe.total() == half, 60, "first half stored by A and B", procs=(a, b))
        b.kill()
        produce(kafka_bootstrap, topics, events.records[half:])
        wait_until(lambda: probe.done(events), 90, "every record stored after B was killed", procs=(a, b))
        assert len(_assignments(a.log())[-1]) == 4
        assert a.terminate() == 0
    finally:
        a.kill()
        if b is not None:
            b.kill()
        probe.close()
    assert consistency(pg_url, topics) == (len(events.records), len(events.records))
    assert_same_state(documents(pg_url), replay_documents(events, tmp_path))


def _kafka_up(svc: ServiceProcess) -> float | None:
    """The service's driftline_kafka_up now (None: not exported)."""
    status, body = svc.get("/metrics")
    found = re.search(r"^driftline_kafka_up (\S+)$", body, re.M) if status == 200 else None
    return None if found is None else float(found.group(1))


def test_broker_unreachable_at_start_and_for_20s_mid_stream(kafka_behind_forwarder, tmp_path: Path) -> None:
    """The broker is cut (TCP forwarder) at start and for 20 s mid-stream while the producer keeps sending:
    the service logs it, reports not-ready, does not exit, recovers by itself, and the state equals replay."""
    broker = kafka_behind_forwarder
    topics, group = {"predictions": "predictions", "outcomes": "outcomes"}, "driftline"
    create_topics(broker.bootstrap, topics.values(), 2)
    config = write_config(tmp_path, topics, group)
    events = make_events(tmp_path, days=1.5)
    half = len(events.records) // 2
    db = f"sqlite:///{tmp_path / 'live.db'}"
    broker.forwarder.stop()
    svc = start_service(tmp_path, config, db, broker.bootstrap)
    probe = StoreProbe(db, topics)
    try:
        wait_until(lambda: "unreachable (attempt 1)" in svc.log(), 30, "unreachable at start logged", procs=(svc,))
        assert svc.get("/healthz")[0] == 200
        status, body = svc.get("/readyz")
        assert status == 503 and "kafka connecting" in body
        assert _kafka_up(svc) == 0.0  # SRE tryout: /metrics was 200 with no sign of it (no lag series at all)
        broker.forwarder.start()
        produce(broker.bootstrap, topics, events.records[:half])
        wait_until(lambda: probe.total() == half, 60, "first half stored", procs=(svc,))
        broker.forwarder.stop()
        t_cut = time.monotonic()
        from kafka import KafkaProducer

        producer = KafkaProducer(bootstrap_servers=broker.direct_bootstrap, linger_ms=5,
                                 reconnect_backoff_max_ms=1000)
        sender = threading.Thread(target=lambda: [producer.send(topics[k], key=key, value=v)
                                                  for k, key, v in events.records[half:]])
        sender.start()
        wait_until(lambda: svc.get("/readyz")[0] == 503, 15, "not ready during the outage", procs=(svc,))
        assert "Kafka unreachable" in svc.log()
        wait_until(lambda: _kafka_up(svc) == 0.0, 15, "driftline_kafka_up 0 during the outage", procs=(svc,))
        assert svc.proc.poll() is None
        time.sleep(max(0.0, 20 - (time.monotonic() - t_cut)))
        broker.forwarder.start()
        sender.join(timeout=60)
        producer.flush(timeout=60)
        producer.close(timeout=10)
        wait_until(lambda: probe.done(events), 60, "every record stored after the outage", procs=(svc,))
        wait_until(lambda: svc.get("/readyz")[0] == 200, 20, "ready again", procs=(svc,))
        assert "Kafka reachable again" in svc.log()
        assert _kafka_up(svc) == 1.0
        assert svc.terminate() == 0
    finally:
        svc.kill()
        probe.close()
    assert consistency(db, topics) == (len(events.records), len(events.records))
    assert_same_state(documents(db), replay_documents(events, tmp_path))


@pytest.mark.postgres
def test_database_unavailable_pauses_then_recovers(kafka_bootstrap: str, pg_behind_forwarder,
                                                   tmp_path: Path) -> None:
    """PostgreSQL cut mid-stream: the service keeps its batch, commits nothing to Kafka ahead of the database,
    reports not-ready, and stores everything exactly once when the database is back."""
    pg = pg_behind_forwarder
    topics, group = _topics(), unique_name("g")
    create_topics(kafka_bootstrap, topics.values(), 2)
    config = write_config(tmp_path, topics, group)
    events = make_events(tmp_path, days=1.5)
    half = len(events.records) // 2
    svc = start_service(tmp_path, config, pg.url, kafka_bootstrap)
    probe = StoreProbe(pg.database.url, topics)  # direct connection: readable during the cut
    try:
        produce(kafka_bootstrap, topics, events.records[:half])
        wait_until(lambda: probe.total() == half, 60, "first half stored", procs=(svc,))
        pg.forwarder.stop()
        produce(kafka_bootstrap, topics, events.records[half:])
        wait_until(lambda: "database unavailable" in svc.log(), 30, "database outage logged", procs=(svc,))
        status, body = wait_until(lambda: (lambda r: r if r[0] == 503 else None)(svc.get("/readyz")), 15,
                                  "not ready", procs=(svc,))
        assert "database" in body
        time.sleep(4)
        assert probe.total() == half
        assert _group_offsets(kafka_bootstrap, group) <= half  # never ahead of the stored state
        pg.forwarder.start()
        wait_until(lambda: probe.done(events), 60, "every record stored after the outage", procs=(svc,))
        assert "database reachable again" in svc.log()
        assert svc.terminate() == 0
    finally:
        svc.kill()
        probe.close()
    url = pg.database.url
    assert consistency(url, topics) == (len(events.records), len(events.records))
    assert_same_state(documents(url), replay_documents(events, tmp_path))


def test_topics_not_copartitioned_or_missing_are_refused(kafka_bootstrap: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """`topics check`, `topics create`, `simulate --kafka` and `run` refuse topics with different partition
    counts with a clear message; `run` refuses missing topics without creating them."""
    from driftline.cli import main
    from kafka import KafkaAdminClient

    from driftline.kafka.topics import describe

    topics = _topics()
    create_topics(kafka_bootstrap, [topics["predictions"]], 2)
    create_topics(kafka_bootstrap, [topics["outcomes"]], 3)
    config = write_config(tmp_path, topics, unique_name("g"))
    base = ["--config", str(config)]
    assert main([*base, "topics", "check", "--kafka", kafka_bootstrap]) == 2
    err = _flat(capsys.readouterr().err)
    assert "not co-partitioned" in err and "has 2 partitions" in err and "has 3 partitions" in err
    assert main([*base, "topics", "create", "--kafka", kafka_bootstrap]) == 2
    assert "not co-partitioned" in _flat(capsys.readouterr().err)
    assert main([*base, "simulate", "--kafka", kafka_bootstrap, "--days", "0.1"]) == 2
    assert "not co-partitioned" in _flat(capsys.readouterr().err)
    run = subprocess.run([sys.executable, "-m", "driftline.cli", *base, "--db", f"sqlite:///{tmp_path / 'x.db'}",
                          "run", "--kafka", kafka_bootstrap, "--port", "0"], capture_output=True, timeout=60)
    assert run.returncode == 2
    assert "not co-partitioned" in _flat(run.stderr.decode())

    missing = _topics()
    config2 = write_config(tmp_path, missing, unique_name("g"), name="missing.yaml")
    run = subprocess.run([sys.executable, "-m", "driftline.cli", "--config", str(config2), "--db",
                          f"sqlite:///{tmp_path / 'y.db'}", "run", "--kafka", kafka_bootstrap, "--port", "0"],
                         capture_output=True, timeout=60)
    assert run.returncode == 2 and "do not exist" in _flat(run.stderr.decode())
    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    try:
        assert describe(admin, list(missing.values())) == {t: None for t in missing.values()}
    finally:
        admin.close()
    assert main(["--config", str(config2), "topics", "create", "--kafka", kafka_bootstrap, "--partitions",
                 "3"]) == 0
    assert main(["--config", str(config2), "topics", "check", "--kafka", kafka_bootstrap]) == 0
    assert "co-partitioned, 3 partitions each" in _flat(capsys.readouterr().out)
