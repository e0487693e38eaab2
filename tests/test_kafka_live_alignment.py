"""Live traffic with outcomes stamped at their prediction's time (README, Event format: the time of the fraud, not of
its confirmation), real broker (tansu): the event-time alignment (kafka/alignment.py) must hold nothing back.

Reproduction (before the fix): horizon 90d (align_within 22.5 d), predictions stamped now and outcomes for
predictions of 30 days before stamped with their prediction's ts, 300 and 60 a second for 20 s: 17,640 records
given back for 5,910 predictions (each read about three times), the prediction partitions paused again and again,
and maintenance run at a watermark 30 days back in 4 passes of 19; with align_within 89d: none."""

from __future__ import annotations

import math
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from helpers import outcome, pred
from kafka_fixtures import create_topics, unique_name
from kafka_service_support import StoreProbe, wait_until, write_config

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

DAY = 86400.0
ROUNDS, PREDICTIONS, OUTCOMES = 8, 60, 12


def test_live_outcomes_stamped_weeks_behind_hold_no_prediction_back(kafka_bootstrap: str, tmp_path: Path) -> None:
    """In each round, fresh predictions and outcomes of predictions of 30 days before are written together and
    stored before the next round: no record is given back, no partition paused, maintenance never behind."""
    from kafka import KafkaProducer

    from driftline.config import from_dict
    from driftline.ingest.pipeline import Pipeline, RawRecord
    from driftline.kafka.consumer import LiveConsumer
    from driftline.kafka.settings import resolve
    from driftline.storage.store import Store

    topics = {"predictions": unique_name("predictions"), "outcomes": unique_name("outcomes")}
    create_topics(kafka_bootstrap, topics.values(), 3)
    config = from_dict(yaml.safe_load(write_config(tmp_path, topics, unique_name("g")).read_text()))
    assert config.align_within_s == 22.5 * DAY
    start = time.time()
    history = [start - 30 * DAY + i for i in range(ROUNDS * OUTCOMES)]
    db = f"sqlite:///{tmp_path / 'live.db'}"
    store = Store(db)
    store.migrate()
    pipeline = Pipeline(config, store)
    pipeline.process_batch([RawRecord("file:history", 0, i, pred(f"h{i}", 0.7, t), "prediction")
                            for i, t in enumerate(history)])
    given: dict[str, Any] = {"records": 0, "paused": 0, "ceilings": []}

    class Counted(LiveConsumer):
        def _give_back(self, batch: Any, found: Any) -> None:
            given["records"] += sum(len(recs) - sum(r.offset < found.deferred[(f"kafka:{tp.topic}", tp.partition)][0]
                                                    for r in recs)
                                    for tp, recs in batch.items() if (f"kafka:{tp.topic}", tp.partition)
                                    in found.deferred)
            super()._give_back(batch, found)

        def _align(self) -> None:
            before = set(self.align.waiting)
            super()._align()
            given["paused"] += len(set(self.align.waiting) - before)

        def _maintenance_ceiling(self) -> float:
            ceiling = super()._maintenance_ceiling()
            given["ceilings"].append((ceiling, set(self.expected) <= set(self.align.reached)))
            return ceiling

    stop = threading.Event()
    consumer = Counted(pipeline, resolve(config.kafka, kafka_bootstrap, {}), stop, maintain_every_s=0.0)
    thread = threading.Thread(target=consumer.run, daemon=True)
    thread.start()
    probe = StoreProbe(db, topics)
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, linger_ms=5)
    try:
        wait_until(lambda: len(consumer.expected) == 6 and not consumer.pending, 60, "six partitions positioned")
        for r in range(ROUNDS):
            for i in range(r * PREDICTIONS, (r + 1) * PREDICTIONS):
                producer.send(topics["predictions"], key=f"n{i}".encode(), value=pred(f"n{i}", 0.4, time.time()))
            for i in range(r * OUTCOMES, (r + 1) * OUTCOMES):
                producer.send(topics["outcomes"], key=f"h{i}".encode(), value=outcome(f"h{i}", 1, history[i]))
            producer.flush(timeout=30)
            wait_until(lambda: probe.total("predictions") == (r + 1) * PREDICTIONS
                       and probe.total("outcomes") == (r + 1) * OUTCOMES, 60, f"round {r} stored")
    finally:
        producer.close(timeout=10)
        stop.set()
        thread.join(timeout=30)
        probe.close()
    counters = store.counters()
    store.close()
    assert given["records"] == 0 and given["paused"] == 0
    # the stored watermark: now, once every partition has stored records (its time known); before that a partition
    # holding records of unknown time holds maintenance back entirely (-inf), never at a time weeks behind (a
    # 4-worker run caught a heartbeat in that first moment: [-inf, -inf, inf, inf, inf])
    known = [c for c, every in given["ceilings"] if every]
    assert known and all(c > start for c in known), given["ceilings"]
    assert all(c > start or c == -math.inf for c, every in given["ceilings"] if not every), given["ceilings"]
    assert counters[("events", "outcome")] == ROUNDS * OUTCOMES
    assert counters[("events", "prediction")] == len(history) + ROUNDS * PREDICTIONS
    assert not counters.get(("dead_letters", "past_horizon"))
