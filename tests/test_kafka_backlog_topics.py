"""A backlog of both topics, one partition each, read in step in event time (kafka/alignment.py): kafka-python fetches
by bytes per partition, so the outcomes topic (small records) ran days ahead of the predictions topic, its newest
event became the watermark and the predictions read afterwards fell more than `labels.horizon` behind it (SRE
tryout: 34,174 of 40,227 predictions dead-lettered past_horizon over 20 days with a 3d horizon). The partition-level
test in test_kafka_backlog_alignment.py races partitions of one topic; this one races the two topics."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kafka_fixtures import create_topics, unique_name
from kafka_service_support import (StoreProbe, diff, documents, make_events, produce, start_service,
                                   wait_until, write_config)


@pytest.mark.slow
def test_a_backlog_of_both_topics_longer_than_the_horizon_ends_as_the_replay(kafka_bootstrap: str,
                                                                              tmp_path: Path) -> None:
    """Ten simulated days produced before `run` starts, labels.horizon 3d, batches of 1,000: the end state equals a
    replay of the same events (no past_horizon letters beyond the replay's; maintenance expires the same ones)."""
    topics = {"predictions": unique_name("bp"), "outcomes": unique_name("bo")}
    create_topics(kafka_bootstrap, topics.values(), 1)
    events = make_events(tmp_path, days=10, per_day=2000, seed=31)
    produce(kafka_bootstrap, topics, events.records)
    config = write_config(tmp_path, topics, unique_name("bg"), batch=1000)
    doc = yaml.safe_load(config.read_text())
    doc["labels"] = {"horizon": "3d"}
    config.write_text(yaml.safe_dump(doc))
    url = f"sqlite:///{tmp_path / 'live.db'}"
    seq = f"sqlite:///{tmp_path / 'replay.db'}"
    rc = subprocess.run([sys.executable, "-m", "driftline.cli", "--config", str(config), "--db", seq, "replay",
                         str(events.path), "--json"], capture_output=True, timeout=180)
    assert rc.returncode == 0, rc.stderr.decode()
    expected = documents(seq)
    assert expected["counters"].get("dead_letters:past_horizon", 0) <= 1  # the duplicate appended at the end
    svc = start_service(tmp_path, config, url, kafka_bootstrap)
    probe = StoreProbe(url, topics)
    try:
        wait_until(lambda: probe.done(events), 240, "every record stored", procs=(svc,))
        counters = documents(url)["counters"]
        assert counters.get("dead_letters:past_horizon", 0) == expected["counters"].get("dead_letters:past_horizon", 0)
        wait_until(lambda: not list(diff(documents(url), expected)), 90,  # the service's maintenance runs every 30 s
                   "the live state equal to replay's", procs=(svc,))
        assert svc.terminate() == 0
    finally:
        svc.kill()
        probe.close()
