"""Catching up a backlog longer than labels.horizon with the real broker (tansu): partitions and topics read at
different speeds must end as one sequential replay of the same events sorted by time, with nothing dead-lettered
past_horizon (event-time alignment of the consumer, kafka/alignment.py).

Reproduction (before the alignment): 4 days of events, horizon 1d, three partitions of which partition 0 holds few
events: its first fetch spans all 4 days, the stored watermark jumped to day 4 and most events of the other
partitions were dead-lettered past_horizon."""

from __future__ import annotations

import json
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from helpers import outcome, pred
from kafka_fixtures import create_topics, unique_name
from kafka_service_support import (StoreProbe, assert_same_state, documents, start_service, wait_until,
                                   write_config)

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

DAY = 86400.0
START = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def backlog(n: int = 4000, days: float = 4.0, seed: int = 5) -> list[tuple[int, str, bytes, bytes, float]]:
    """(partition, kind, key, payload, ts) of `days` of predictions and their outcomes (70 % labelled, delays up
    to 0.9 of a day: below the 1d horizon, so the sorted replay joins every one); partition 0 holds 1 in 20
    predictions, so its first fetch spans every day while the others' span hours."""
    rng = np.random.default_rng(seed)
    ts = np.sort(START + rng.random(n) * days * DAY)
    out: list[tuple[int, str, bytes, bytes, float]] = []
    for i, t in enumerate(ts):
        pid = f"p{i}"
        h = zlib.crc32(pid.encode())
        part = 0 if h % 20 == 0 else 1 + h % 2
        score = float(rng.random())
        variant = "A" if h % 3 else "B"
        out.append((part, "predictions", pid.encode(), pred(pid, score, float(t), variant=variant), float(t)))
        if rng.random() < 0.7:
            u = float(t) + 60.0 + float(rng.random()) * 0.9 * DAY
            if u < START + days * DAY:
                label = int(rng.random() < score)
                out.append((part, "outcomes", pid.encode(), outcome(pid, label, u), u))
    return out


def _produce(bootstrap: str, topics: dict[str, str], events: list[tuple[int, str, bytes, bytes, float]]) -> None:
    """Every event to its partition, in time order within each partition (as producers write them)."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    try:
        for part, kind, key, payload, _ in sorted(events, key=lambda e: e[4]):
            producer.send(topics[kind], key=key, value=payload, partition=part)
        producer.flush(timeout=120)
    finally:
        producer.close(timeout=10)


def _config(tmp: Path, topics: dict[str, str], group: str, extra: dict[str, object] | None = None) -> Path:
    path = write_config(tmp, topics, group, batch=400)
    data = yaml.safe_load(path.read_text())
    data["labels"] = {"horizon": "1d"}
    data["kafka"].update(extra or {})
    path.write_text(yaml.safe_dump(data))
    return path


def _replay(config: Path, paths: list[Path], db: str) -> list[dict[str, object]]:
    """`driftline replay` of each file in turn into `db`; the summaries."""
    docs = []
    for path in paths:
        rc = subprocess.run([sys.executable, "-m", "driftline.cli", "--config", str(config), "--db", db, "replay",
                             str(path), "--json"], capture_output=True, timeout=120)
        assert rc.returncode == 0, rc.stderr.decode()
        docs.append(json.loads(rc.stdout))
    return docs


def _counter(db: str, key: tuple[str, str]) -> int:
    from driftline.storage.store import Store

    store = Store(db)
    try:
        return store.counters().get(key, 0)
    finally:
        store.close()


def _past_horizon(db: str) -> int:
    return _counter(db, ("dead_letters", "past_horizon"))


def test_backlog_longer_than_the_horizon_ends_as_the_sorted_replay(kafka_bootstrap: str, tmp_path: Path) -> None:
    """A 4-day backlog, horizon 1d, one partition far ahead in event time after its first fetch: no event is
    dead-lettered past_horizon and the end state equals `driftline replay` of the events sorted by time."""
    events = backlog()
    topics = {"predictions": unique_name("predictions"), "outcomes": unique_name("outcomes")}
    group = unique_name("g")
    create_topics(kafka_bootstrap, topics.values(), 3)
    _produce(kafka_bootstrap, topics, events)
    config = _config(tmp_path, topics, group)
    sorted_file = tmp_path / "sorted.jsonl"
    sorted_file.write_bytes(b"".join(p + b"\n" for *_, p, _ in sorted(events, key=lambda e: e[4])))
    expected_db = f"sqlite:///{tmp_path / 'replay.db'}"
    _replay(config, [sorted_file], expected_db)
    assert _past_horizon(expected_db) == 0

    db = f"sqlite:///{tmp_path / 'live.db'}"
    svc = start_service(tmp_path, config, db, kafka_bootstrap)
    probe = StoreProbe(db, topics)
    try:
        wanted = {k: sum(e[1] == k for e in events) for k in topics}
        wait_until(lambda: all(probe.total(k) == n for k, n in wanted.items()), 120, "every record stored",
                   procs=(svc,))
        assert _past_horizon(db) == 0, svc.log()[-3000:]
        expired = _counter(expected_db, ("expired_predictions", ""))
        assert expired  # the horizon is shorter than the backlog: maintenance expires the unlabelled ones
        wait_until(lambda: _counter(db, ("expired_predictions", "")) >= expired, 90,
                   "a maintenance pass (every 30 s) after the backlog", procs=(svc,))
        assert svc.terminate(timeout=30) == 0
    finally:
        svc.kill()
        probe.close()
    assert "partitions paused, more than kafka.align_within (6h) ahead of the slowest" in svc.log()
    assert_same_state(documents(db), documents(expected_db))


def test_maintenance_during_the_backlog_expires_nothing_the_sorted_replay_joins(kafka_bootstrap: str,
                                                                                 tmp_path: Path) -> None:
    """The consumer in this process, maintenance after every second of the backlog (`run`: every 30 s): outcomes up
    to 0.9 d after their prediction (horizon 1 d) are still joined, as in the sorted replay; maintenance at the
    stored watermark (up to kafka.align_within ahead of the slowest partition) expired some of their predictions
    first."""
    import threading

    from driftline.config import from_dict
    from driftline.ingest.pipeline import Pipeline
    from driftline.kafka.consumer import LiveConsumer
    from driftline.kafka.settings import resolve
    from driftline.storage.store import Store

    events, topics, config_path, expected_db = produced_backlog(kafka_bootstrap, tmp_path)

    config = from_dict(yaml.safe_load(config_path.read_text()))
    db = f"sqlite:///{tmp_path / 'live.db'}"
    store = Store(db)
    store.migrate()
    stop = threading.Event()
    consumer = LiveConsumer(Pipeline(config, store), resolve(config.kafka, kafka_bootstrap, {}), stop,
                            maintain_every_s=0.0)
    thread = threading.Thread(target=consumer.run, daemon=True)
    thread.start()
    probe = StoreProbe(db, topics)
    try:
        wanted = {k: sum(e[1] == k for e in events) for k in topics}
        wait_until(lambda: all(probe.total(k) == n for k, n in wanted.items()), 180, "every record stored")
        expired = _counter(expected_db, ("expired_predictions", ""))
        wait_until(lambda: _counter(db, ("expired_predictions", "")) >= expired, 30, "a maintenance pass after it")
    finally:
        stop.set()
        thread.join(timeout=30)
        probe.close()
        store.close()
    assert _past_horizon(db) == 0
    assert_same_state(documents(db), documents(expected_db))


def produced_backlog(kafka_bootstrap: str, tmp_path: Path) -> tuple[list[Any], dict[str, str], Path, str]:
    """(events, topics, config path, URL of their sorted replay): a 6,000-event backlog produced to 3 partitions per
    topic, read in batches of 150, and the database one replay of the same events sorted by ts fills (the end state
    a live consumer must reach)."""
    events = backlog(n=6000, seed=8)
    topics = {"predictions": unique_name("predictions"), "outcomes": unique_name("outcomes")}
    create_topics(kafka_bootstrap, topics.values(), 3)
    _produce(kafka_bootstrap, topics, events)
    config_path = _config(tmp_path, topics, unique_name("g"), {"batch_max_records": 150})
    sorted_file = tmp_path / "sorted.jsonl"
    sorted_file.write_bytes(b"".join(p + b"\n" for *_, p, _ in sorted(events, key=lambda e: e[4])))
    expected_db = f"sqlite:///{tmp_path / 'replay.db'}"
    _replay(config_path, [sorted_file], expected_db)
    return events, topics, config_path, expected_db
