"""`serve`'s maintenance job beside a `run` consumer catching up a backlog longer than labels.horizon (real broker):
it must expire nothing, and mature nothing, that a sequential replay of the events sorted by time would still join.

Reproduction (before the shared ceiling, storage/ceilings.py): the job used the stored watermark (the newest event
stored), up to kafka.align_within ahead of the consumer's slowest partition with records left, and expired
predictions whose outcomes were still unread there (more expired, fewer labelled than the replay)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from kafka_service_support import StoreProbe, assert_same_state, documents, wait_until
from test_kafka_backlog_alignment import _counter, _past_horizon, produced_backlog

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_serve_maintenance_during_a_backlog_expires_nothing_the_sorted_replay_joins(
        kafka_bootstrap: str, tmp_path: Path, backend: str, request: pytest.FixtureRequest) -> None:
    """The consumer in this process (its own maintenance every pass) and `serve`'s maintenance job (Jobs.maintain,
    hourly in `serve`) run over and over on its own connection while the backlog is read: the end state equals the
    sorted replay."""
    from driftline.config import from_dict
    from driftline.ingest.pipeline import Pipeline
    from driftline.kafka.consumer import LiveConsumer
    from driftline.kafka.settings import resolve
    from driftline.service.scheduler import Jobs
    from driftline.storage.store import Store

    events, topics, config_path, expected_db = produced_backlog(kafka_bootstrap, tmp_path)

    config = from_dict(yaml.safe_load(config_path.read_text()))
    db = f"sqlite:///{tmp_path / 'live.db'}" if backend == "sqlite" else request.getfixturevalue("pg_url")
    store, serve_store = Store(db), Store(db)
    store.migrate()
    stop = threading.Event()
    consumer = LiveConsumer(Pipeline(config, store), resolve(config.kafka, kafka_bootstrap, {}), stop,
                            maintain_every_s=0.0)
    jobs = Jobs(serve_store, config)
    passes: list[Any] = []

    def serve_maintenance() -> None:
        while not stop.is_set():
            passes.append(jobs.maintain())
            time.sleep(0.05)

    threads = [threading.Thread(target=consumer.run, daemon=True), threading.Thread(target=serve_maintenance,
                                                                                     daemon=True)]
    for thread in threads:
        thread.start()
    probe = StoreProbe(db, topics)
    try:
        wanted = {k: sum(e[1] == k for e in events) for k in topics}
        wait_until(lambda: all(probe.total(k) == n for k, n in wanted.items()), 180, "every record stored")
        expired = _counter(expected_db, ("expired_predictions", ""))
        wait_until(lambda: _counter(db, ("expired_predictions", "")) >= expired, 30, "a maintenance pass after it")
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
        left = store.meta_prefixed("ceiling:")
        probe.close()
        jobs.close()
        serve_store.close()
        store.close()
    assert sum(p.status == "done" for p in passes) > 10, passes[:20]
    assert any("held_back_to" in p.detail for p in passes)  # the consumer's ceiling held the job back
    assert not left  # the consumer stopped cleanly: its ceiling row is gone (storage/ceilings.py)
    assert _past_horizon(db) == 0
    assert_same_state(documents(db), documents(expected_db))
