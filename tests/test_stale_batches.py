"""A batch fenced by the stored positions is counted (SRE tryout: a second `run` with another kafka.group_id on
the same database read everything; counts stayed exact, but the only trace was a WARNING line)."""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace

from kafka import TopicPartition
from prometheus_client import generate_latest

from driftline.config import Config, Kafka
from driftline.ingest.pipeline import Pipeline
from driftline.kafka.consumer import LiveConsumer
from driftline.kafka.settings import resolve
from driftline.storage.store import Store


def _stale_batches(lc: LiveConsumer) -> float:
    lines = [ln for ln in generate_latest(lc.ops.registry).decode().splitlines()
             if ln.startswith("driftline_consumer_stale_batches_total ")]
    assert len(lines) == 1, lines
    return float(lines[0].split()[1])


def test_a_batch_whose_position_another_consumer_moved_is_counted_and_not_stored(tmp_path: Path) -> None:
    """Exported at 0 from the start (an alert needs an increase), 1 after one fenced batch, which stores nothing."""
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    store.migrate()
    settings = resolve(Kafka(predictions_topic="p", outcomes_topic="o"), "127.0.0.1:1", {})
    lc = LiveConsumer(Pipeline(Config(), store, clock=lambda: 1.9e9), settings, threading.Event())
    assert _stale_batches(lc) == 0.0
    tp = TopicPartition("p", 0)
    lc.consumer = SimpleNamespace(pause=lambda *tps: None, resume=lambda *tps: None, highwater=lambda tp: None)
    lc.owned, lc.expected = {tp}, {tp: 0}
    store.advance_positions({("kafka:p", 0): (0, 3)})  # the other group's consumer stored offsets 0..2
    record = SimpleNamespace(offset=0, key=b"a", value=b'{"prediction_id": "a", "model": "m", "score": 0.5}')
    lc._store({tp: [record]})
    assert _stale_batches(lc) == 1.0
    assert store.positions("kafka:p") == {0: 3} and tp in lc.pending and tp not in lc.expected
    store.close()
