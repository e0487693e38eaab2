"""A member stuck out of its group (kafka-python 3 after a broker reset: coordinator re-discovered, the leader's
SyncGroup lost, poll() returning nothing for good) gets a new Kafka client after kafka.stall_restart and loses
nothing; a stable member that owns nothing (more processes than partitions) is left alone."""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

from driftline.config import ConfigError, Kafka, from_dict
from driftline.kafka.settings import resolve
from driftline.storage.store import Store
from kafka_service_support import assert_same_state, documents, make_events
from test_kafka_faults import consumer, drain
from test_kafka_loop import Clock, FakeConsumer, partitioned, replayed, total


def _restarts(lc) -> float:
    return lc.sig.client_restarts._value.get()


def _reconnects_to(lc, fresh: FakeConsumer, logs) -> FakeConsumer:
    """Make the consumer's next connect() attach `fresh`, which is then assigned every partition."""
    def connect() -> bool:
        fresh.listener = lc.attach(fresh)
        fresh.rebalance(set(logs))
        return True

    lc.connect = connect
    return fresh


def test_a_member_stuck_out_of_its_group_gets_a_new_client_and_stores_everything_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    events = make_events(tmp_path, days=0.3, per_day=1500)
    url = f"sqlite:///{tmp_path / 'live.db'}"
    store = Store(url)
    store.migrate()
    clock = Clock()
    logs = partitioned(events.records)
    lc, stuck = consumer(store, logs, clock, stall_restart="60s")
    stuck.rebalance(set(logs))
    lc.step()
    lc.step()
    assert 0 < total(store)
    stuck.queued.append(("revoke", set(stuck.assigned)))  # the broker went away: partitions revoked ...
    stuck._coordinator = SimpleNamespace(coordinator_id=None, state="<rebalancing>")  # ... and never rejoined
    fresh = _reconnects_to(lc, FakeConsumer(logs, store), logs)
    for _ in range(50):  # 55 s stuck: still within kafka.stall_restart
        lc.step()
        clock.t += 1.1
    assert lc.consumer is stuck and _restarts(lc) == 0 and not lc.owned
    assert not lc.ready()[0]
    with caplog.at_level(logging.WARNING, logger="driftline.kafka.consumer"):
        for _ in range(10):
            lc.step()
            clock.t += 1.1
    assert lc.consumer is fresh and _restarts(lc) == 1
    assert "Kafka client stuck for 6" in caplog.text and "group coordinator unknown" in caplog.text
    drain(lc, clock, store, len(events.records))
    assert total(store) == len(events.records) and lc.ready()[0]
    store.close()
    assert_same_state(documents(url), replayed(tmp_path, events))  # floats: equal up to summation order


def test_a_stable_member_that_owns_nothing_keeps_its_client(tmp_path: Path) -> None:
    events = make_events(tmp_path, days=0.1, per_day=1500)
    store = Store(f"sqlite:///{tmp_path / 'live.db'}")
    store.migrate()
    clock = Clock()
    lc, idle = consumer(store, partitioned(events.records), clock, stall_restart="60s")
    idle._coordinator = SimpleNamespace(coordinator_id="coordinator-1", state="<stable>")
    for _ in range(200):
        lc.step()
        clock.t += 1.1
    assert lc.consumer is idle and _restarts(lc) == 0
    assert lc.ready() == (False, lc.ready()[1]) and "no partition assigned" in lc.ready()[1]
    store.close()


def test_stall_restart_must_exceed_the_rebalance_timeout() -> None:
    """Refused when the config loads (it was refused by `run` only), and by `run` when the environment's options
    make the rebalance timeout longer."""
    with pytest.raises(ConfigError, match=r"invalid field `kafka.stall_restart`: 30s must exceed"):
        from_dict({"kafka": {"stall_restart": "30s"}})
    with pytest.raises(ConfigError, match=r"invalid field `kafka.stall_restart`: 60s must exceed"):
        from_dict({"kafka": {"stall_restart": "60s", "options": {"max_poll_interval_ms": 60000}}})
    with pytest.raises(ConfigError, match=r"^kafka.stall_restart: 60s must exceed"):
        resolve(Kafka(stall_restart="60s"), "127.0.0.1:9092", {"DRIFTLINE_KAFKA_OPT_MAX_POLL_INTERVAL_MS": "60000"})
    assert resolve(Kafka(), "127.0.0.1:9092", {}).stall_restart_s == 90.0


def test_a_rebuilt_client_hands_its_partitions_over_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """SRE tryout: "partitions revoked" was logged twice when the client was rebuilt while it owned partitions
    (once handed over as lost, once more by the discarded client's close); the old client's callbacks are ignored
    once its partitions are handed over, and the new client is positioned and consumes as before."""
    events = make_events(tmp_path, days=0.2, per_day=1500)
    store = Store(f"sqlite:///{tmp_path / 'live.db'}")
    store.migrate()
    clock = Clock()
    logs = partitioned(events.records)
    lc, old = consumer(store, logs, clock)
    old.rebalance(set(logs))
    lc.step()
    lc.step()
    assert lc.owned
    fresh = _reconnects_to(lc, FakeConsumer(logs, store), logs)
    with caplog.at_level(logging.INFO, logger="driftline.kafka.consumer"):
        lc._rebuild(clock.t)
    assert [r.getMessage() for r in caplog.records if "partitions revoked" in r.getMessage()] == [
        "partitions revoked: o[0], o[1], p[0], p[1]"]
    drain(lc, clock, store, len(events.records))
    assert total(store) == len(events.records) and lc.consumer is fresh
