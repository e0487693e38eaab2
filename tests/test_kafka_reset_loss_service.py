"""The SRE tryout's broker reset under lag, with a real `driftline run` and the real tansu broker: the service has
seen the logs' ends but not stored them (its database write lock held by the test), the broker is killed -9,
restarted empty and the topics recreated. The records of the old logs never ingested are counted and logged (it
was lag 0 and silence): each line's loss is the old end seen − the stored position, never more than was produced.
It can fall short: the ends are those of the last lag refresh (a main loop waiting for the database lock runs it
rarely), and tansu reports a partition's end as the base offset of its last batch."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from kafka.errors import TopicAlreadyExistsError

from kafka_fixtures import create_topics
from kafka_service_support import StoreProbe, make_events, produce, start_service, wait_until, write_config
from test_kafka_fault_service import _restart_empty, _with

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

LINE = re.compile(r"offset reset: (\w+)\[(\d)\] stored position (\d+) .*records skipped: (\d+) of the log found, "
                  r"(\d+) of the previous log \(never ingested: its end was (\d+) when last seen\)")


def _lag(svc: Any) -> float:
    return sum(map(float, re.findall(r"^driftline_consumer_lag_messages\{[^}]*\} (\S+)$", svc.get("/metrics")[1],
                                     re.M)))


def test_records_a_broker_reset_throws_away_are_counted_and_logged(kafka_behind_forwarder: Any,
                                                                   tmp_path: Path) -> None:
    broker = kafka_behind_forwarder
    topics = {"predictions": "predictions", "outcomes": "outcomes"}
    create_topics(broker.bootstrap, topics.values(), 2)
    config = _with(write_config(tmp_path, topics, "driftline"), on_offset_reset="earliest")
    events = make_events(tmp_path, days=1.0)
    half = len(events.records) // 2
    db_path = tmp_path / "live.db"
    svc = start_service(tmp_path, config, f"sqlite:///{db_path}", broker.bootstrap)
    probe = StoreProbe(f"sqlite:///{db_path}", topics)
    brokers = []
    lock = None
    try:
        produce(broker.bootstrap, topics, events.records[:half])
        wait_until(lambda: probe.total() == half, 90, "first half stored", procs=(svc,))
        lock = sqlite3.connect(db_path, isolation_level=None, timeout=30)
        lock.execute("BEGIN IMMEDIATE")  # the service reads, and sees the log ends, but cannot store
        produce(broker.bootstrap, topics, events.records[half:])
        seen: list[float] = []

        def settled() -> float | None:  # the lag of the second half, the same for 15 s: lags are refreshed every
            # 5 s between the batch's lock waits of max_poll_interval_ms / 3 (6.7 s here), so a lag read only the
            # same for 6 s (what this asked) could be the first refresh's, before the second half was all produced
            seen.append(_lag(svc))
            return seen[-1] if len(seen) > 60 and len(set(seen[-61:])) == 1 and seen[-1] > 0 else None

        lag_before = wait_until(settled, 90, "the lag of the second half seen", procs=(svc,))
        brokers.append(_restart_empty(broker, tmp_path))
        try:
            create_topics(broker.bootstrap, topics.values(), 2)
        except TopicAlreadyExistsError:  # recreated first by a running client (tansu creates on metadata)
            pass
        lock.rollback()
        lock.close()
        lock = None
        found = wait_until(lambda: (lambda f: f if len(f) == 4 else None)(
            {(m[0], int(m[1])): m[2:] for m in LINE.findall(svc.log())}), 120, "four offset resets logged",
            procs=(svc,))
        for (t, p), (stored, skipped_found, previous, end) in found.items():
            assert int(skipped_found) == 0 and int(previous) == int(end) - int(stored), (t, p)
        # never more than was produced; at most what the lag showed beyond what was stored since (the ends are
        # those of the last lag refresh, which a main loop waiting for the database lock runs rarely)
        stored_at_reset = sum(int(v[0]) for v in found.values())
        assert sum(int(v[3]) for v in found.values()) <= len(events.records)
        assert 0 < sum(int(v[2]) for v in found.values()) <= lag_before - (stored_at_reset - half)
        lost = {t: sum(int(v[2]) for (tt, _), v in found.items() if tt == t) for t in topics.values()}
        assert lost["predictions"] > 0
        for topic, n in lost.items():
            wait_until(lambda: f'driftline_consumer_offset_reset_skipped_records_total{{log="previous",topic="{topic}"}}'
                       f" {float(n)}" in svc.get("/metrics")[1], 10, f"{topic}: {n} skipped exported", procs=(svc,))
        assert svc.terminate() == 0
    finally:
        if lock is not None:
            lock.close()
        svc.kill()
        probe.close()
        for b in brokers:
            b.process.kill()
