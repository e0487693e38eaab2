"""`run` against a real broker (tansu) with large events: batches are cut at kafka.batch_max_bytes, not only at
kafka.batch_max_records (SRE tryout: 900 valid events of ~1 MB grew `driftline run` past 1 GB)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from kafka_fixtures import create_topics, unique_name
from kafka_service_support import StoreProbe, consistency, produce, start_service, wait_until

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

EVENTS, SIZE, BOUND = 24, 300_000, 1 << 20
PER_BATCH = 4
"""At most this many events a batch: three stay under 1 MiB, the fourth crosses it and ends the batch."""


def _event(i: int) -> bytes:
    return (b'{"type":"prediction","prediction_id":"big-%d","model":"fraud","ts":"2026-01-09T00:00:00Z",'
            b'"score":0.5,"features":{"amount":1.0},"note":"' % i + b"A" * SIZE + b'"}')


def test_large_events_are_stored_in_batches_within_max_bytes(kafka_bootstrap: str, tmp_path: Path) -> None:
    topics = {"predictions": unique_name("bigp"), "outcomes": unique_name("bigo")}
    create_topics(kafka_bootstrap, topics.values(), 1)
    produce(kafka_bootstrap, topics, [("predictions", f"big-{i}".encode(), _event(i)) for i in range(EVENTS)])
    config = tmp_path / "driftline.yaml"
    config.write_text(yaml.safe_dump({"kafka": {
        "predictions_topic": topics["predictions"], "outcomes_topic": topics["outcomes"], "group_id": unique_name("g"),
        "batch_max_bytes": BOUND, "stall_restart": "30s",
        "options": {"session_timeout_ms": 6000, "heartbeat_interval_ms": 2000, "max_poll_interval_ms": 20000}}}))
    db = f"sqlite:///{tmp_path / 'live.db'}"

    first = start_service(tmp_path, config, db, kafka_bootstrap, name="first", fault="after_store_commit:1")
    assert first.proc.wait(timeout=60) == -9, first.log()
    stored, counted = consistency(db, topics)
    assert 1 <= stored == counted <= PER_BATCH  # the first transaction held one batch within the bound

    last = start_service(tmp_path, config, db, kafka_bootstrap, name="last")
    probe = StoreProbe(db, topics)
    try:
        wait_until(lambda: probe.total("predictions") == EVENTS, 60, "every event stored", procs=(last,))
        assert last.terminate() == 0
    finally:
        last.kill()
        probe.close()
    assert consistency(db, topics) == (EVENTS, EVENTS)
    batches = int(re.findall(r"consumer closed after (\d+) stored batches", last.log())[-1])
    assert batches >= -(-(EVENTS - stored) // PER_BATCH)
