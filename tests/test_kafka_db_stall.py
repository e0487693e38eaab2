"""`driftline run` with PostgreSQL behind a proxy that stops relaying without closing anything (SRE tryout:
`kill -STOP` on a TCP forwarder): /readyz turns 503 naming the stalled database call, /healthz stays 200 (the
process is alive; restarting it would not make the database answer), a warning is logged, the stalled call is
broken off into the outage path (batch held, retried), and once the proxy relays again every record is stored exactly once, as `driftline replay` of the same events would store them."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from kafka_fixtures import create_topics, unique_name
from kafka_service_support import (
    StoreProbe, assert_same_state, consistency, documents, make_events, produce, replay_documents, start_service,
    wait_until, write_config,
)

pytestmark = [pytest.mark.kafka, pytest.mark.slow, pytest.mark.postgres]


def test_stalled_database_is_not_ready_with_a_reason_then_recovers_without_loss(kafka_bootstrap: str,
                                                                                 pg_behind_forwarder,
                                                                                 tmp_path: Path) -> None:
    pg = pg_behind_forwarder
    topics = {"predictions": unique_name("predictions"), "outcomes": unique_name("outcomes")}
    group = unique_name("g")
    create_topics(kafka_bootstrap, topics.values(), 2)
    config = write_config(tmp_path, topics, group)
    doc = yaml.safe_load(config.read_text())
    doc["kafka"]["database_stall"] = "3s"
    config.write_text(yaml.safe_dump(doc))
    events = make_events(tmp_path, days=1.5)
    half = len(events.records) // 2
    svc = start_service(tmp_path, config, pg.url, kafka_bootstrap)
    probe = StoreProbe(pg.database.url, topics)  # direct connection: readable during the stall
    try:
        produce(kafka_bootstrap, topics, events.records[:half])
        wait_until(lambda: probe.total() == half, 60, "first half stored", procs=(svc,))
        pg.forwarder.pause()
        produce(kafka_bootstrap, topics, events.records[half:])
        status, body = wait_until(lambda: (lambda r: r if r[0] == 503 and "not answering" in r[1] else None)(
            svc.get("/readyz")), 30, "/readyz 503 naming the stalled call", procs=(svc,))
        assert "has been waiting" in body, body
        assert svc.get("/healthz") == (200, "ok\n")
        assert svc.get("/metrics")[0] in (200, 503)  # an answer, not a client timeout
        wait_until(lambda: "; still waiting" in svc.log(), 30, "the stall warning", procs=(svc,))
        # the stalled ping is broken off: the same path as a refused connection (batch held, retried)
        wait_until(lambda: "database unavailable" in svc.log(), 60, "the outage path taken", procs=(svc,))
        time.sleep(25)  # longer than max_poll_interval_ms (20 s in write_config): the group may evict the member
        assert probe.total() == half
        assert svc.get("/readyz")[0] == 503
        pg.forwarder.resume()
        wait_until(lambda: probe.done(events), 90, "every record stored after the stall", procs=(svc,))
        wait_until(lambda: svc.get("/readyz")[0] == 200, 60, "ready again", procs=(svc,))
        assert "database reachable again" in svc.log()
        assert svc.terminate() == 0
    finally:
        pg.forwarder.resume()
        svc.kill()
        probe.close()
    url = pg.database.url
    assert consistency(url, topics) == (len(events.records), len(events.records))
    assert_same_state(documents(url), replay_documents(events, tmp_path))
