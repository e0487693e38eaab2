"""A `run` replica stopped (SIGSTOP) for ~70 s during a stream, then resumed (SRE tryout, tansu, two replicas in one
group): nothing stored was wrong, but it logged "Kafka unreachable (group coordinator lost …)" with the broker up
the whole time (its heartbeats had stopped with it), and "the log end fell below the stored position" five times in
3 s (the high-water mark kafka-python cached before the pause was older than the positions the other replica stored
meanwhile). The loop's own gap is named instead, and a log end below a stored position is confirmed by the broker
before the partition is checked again (upkeep.py, loop_gap.py)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from kafka.errors import KafkaTimeoutError

from test_kafka_lag_stale import _live
from test_kafka_loop import total

GAP_LINE = ("the consumer loop did not run for 71s (the process was stopped, or starved of CPU): its group "
            "membership lapsed meanwhile; rejoining")


def _heartbeat(fake: Any, seconds_ago: float) -> None:
    """kafka-python's own record of the last heartbeat (what health.broker_connected judges by)."""
    fake.metrics = lambda: {"consumer-coordinator-metrics": {"last-heartbeat-seconds-ago": seconds_ago}}


def _consumed(lc: Any, store: Any, clock: Any, n: int) -> None:
    for _ in range(40):
        lc.step()
        clock.t += 1.1
        if total(store) == n and not lc.pending:
            break
    assert total(store) == n and not lc.pending
    lc._housekeeping()


def test_a_stopped_process_names_its_own_gap_not_an_unreachable_kafka(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Resumed after 71 s: the last heartbeat is 71 s old and kafka-python has dropped the coordinator (its session
    expired), with the broker up. One line names the gap; neither the log nor /readyz says Kafka is unreachable
    while the member rejoins."""
    with _live(tmp_path) as (lc, fake, store, clock, n):
        _consumed(lc, store, clock, n)
        _heartbeat(fake, 1.0)
        with caplog.at_level(logging.INFO, logger="driftline.kafka.consumer"):
            clock.t += 71.0  # the process stopped: no housekeeping, no heartbeat
            _heartbeat(fake, 71.0)
            fake._coordinator.coordinator_id = None  # the heartbeat thread found the session expired
            lc._housekeeping()
            assert lc.status.broker_ok and lc.status.kafka_problem(clock.t) is None
            fake._coordinator.coordinator_id = "coordinator-1"  # found again; the member rejoins
            for _ in range(3):
                clock.t += 1.1
                lc._housekeeping()
                assert lc.status.broker_ok
            _heartbeat(fake, 0.5)
            clock.t += 30.0 - 3.3
            for _ in range(3):
                clock.t += 1.1
                lc._housekeeping()
        assert [r.getMessage() for r in caplog.records if "did not run" in r.getMessage()] == [GAP_LINE]
        assert "unreachable" not in caplog.text and "reachable again" not in caplog.text
        assert lc.status.broker_ok


def test_a_broker_down_across_the_gap_is_still_reported_once_the_coordinator_stays_lost(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The broker really is down when the process runs again: the gap's line first, then (the coordinator still
    lost one staleness bound after the gap, 20 s for a 10 s session) the existing outage lines, as before."""
    with _live(tmp_path) as (lc, fake, store, clock, n):
        _consumed(lc, store, clock, n)
        with caplog.at_level(logging.INFO, logger="driftline.kafka.consumer"):
            clock.t += 71.0
            _heartbeat(fake, 71.0)
            fake._coordinator.coordinator_id = None
            lc._housekeeping()
            assert GAP_LINE in caplog.text and "unreachable" not in caplog.text
            for _ in range(18):  # 19.8 s: still within the bound after the gap
                clock.t += 1.1
                lc._housekeeping()
            assert "unreachable" not in caplog.text and lc.status.broker_ok
            clock.t += 1.1
            lc._housekeeping()
            assert caplog.text.count("Kafka unreachable (group coordinator lost: the broker is down") == 1
            assert not lc.status.broker_ok
            assert (lc.status.kafka_problem(clock.t) or "").startswith("kafka unreachable for 0s")
            fake._coordinator.coordinator_id = "coordinator-1"
            _heartbeat(fake, 0.5)
            clock.t += 5.0
            lc._housekeeping()
        assert "Kafka reachable again after 5s" in caplog.text and lc.status.broker_ok


def test_a_busy_loop_with_heartbeats_going_on_names_no_gap(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A step that took long (the heartbeat thread kept the membership): no gap line, and a coordinator lost after
    it is reported at once, as before."""
    with _live(tmp_path) as (lc, fake, store, clock, n):
        _consumed(lc, store, clock, n)
        with caplog.at_level(logging.INFO, logger="driftline.kafka.consumer"):
            clock.t += 71.0
            _heartbeat(fake, 2.0)
            lc._housekeeping()
            assert "did not run" not in caplog.text
            fake._coordinator.coordinator_id = None
            clock.t += 1.1
            lc._housekeeping()
        assert "Kafka unreachable (group coordinator lost" in caplog.text and not lc.status.broker_ok


def test_a_cached_highwater_below_positions_stored_meanwhile_is_not_a_shrunk_log(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The high-water mark kafka-python fetched before the pause is below the stored positions; the broker's log
    end is not: nothing is re-checked (it was, five times in 3 s), the log ends asked are kept, and the same stale
    mark is not asked about again every second. A broker that does not answer re-checks nothing that pass."""
    with _live(tmp_path) as (lc, fake, store, clock, n):
        _consumed(lc, store, clock, n)
        stale = {tp: max(0, start - 40) for tp, start in lc.expected.items()}
        fake.highwater = lambda tp: stale[tp]
        asked: list[list[Any]] = []
        real_end_offsets = fake.end_offsets

        def end_offsets(tps: list[Any], timeout_ms: int | None = None) -> dict[Any, int]:
            asked.append(tps)
            return real_end_offsets(tps, timeout_ms)

        fake.end_offsets = end_offsets
        lc.log_ends.clear()
        with caplog.at_level(logging.INFO, logger="driftline.kafka.consumer"):
            lc._housekeeping()
            assert "fell below" not in caplog.text and not lc.pending
            assert asked and lc.log_ends == {tp: len(fake.logs[tp]) for tp in fake.logs}
            asked.clear()
            clock.t += 1.1
            lc._housekeeping()  # the same stale marks: not asked again (no lag refresh due either)
            assert asked == [] and not lc.pending

            def unanswered(*_: object, **__: object) -> dict:
                raise KafkaTimeoutError("broker down")

            fake.end_offsets = unanswered
            stale = {tp: max(0, start - 41) for tp, start in lc.expected.items()}  # a new mark: asked again
            clock.t += 1.1
            lc._housekeeping()
            assert "fell below" not in caplog.text and not lc.pending
        assert lc.status.broker_ok


def test_a_log_that_really_shrank_is_still_checked_again(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Both the fetched mark and the broker's log end below the stored positions (the broker restarted empty):
    re-checked as before; when the broker does not answer at first, at the next pass it does."""
    with _live(tmp_path) as (lc, fake, store, clock, n):
        _consumed(lc, store, clock, n)
        shrunk = {tp for tp in fake.logs if tp.topic == "p"}
        for tp in shrunk:
            fake.logs[tp] = fake.logs[tp][:10]
        real_end_offsets = fake.end_offsets

        def unanswered(*_: object, **__: object) -> dict:
            raise KafkaTimeoutError("broker restarting")

        fake.end_offsets = unanswered
        with caplog.at_level(logging.INFO, logger="driftline.kafka.consumer"):
            clock.t += 1.1
            lc._housekeeping()
            assert "fell below" not in caplog.text and not lc.pending
            fake.end_offsets = real_end_offsets
            clock.t += 1.1
            lc._housekeeping()
        assert caplog.text.count("the log end fell below the stored position for o[0], o[1]") == 0
        assert caplog.text.count("the log end fell below the stored position for p[0], p[1]: checking the stored "
                                 "positions against the log again") == 1
        assert lc.pending == shrunk


def test_the_wait_for_a_rebuilt_client_is_no_gap_of_the_loop(tmp_path: Path,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    """A client rebuilt after kafka.stall_restart waits in connect() for as long as the broker is away (here 120 s):
    that wait is an outage, reported as one, not a stopped process."""
    from types import SimpleNamespace

    from test_kafka_loop import FakeConsumer
    from test_kafka_stall import _reconnects_to

    with _live(tmp_path) as (lc, fake, store, clock, n):
        _consumed(lc, store, clock, n)
        fresh = _reconnects_to(lc, FakeConsumer(fake.logs, store), fake.logs)
        attach = lc.connect

        def slow_connect() -> bool:
            clock.t += 120.0  # the broker came back after 2 minutes
            fresh._coordinator = SimpleNamespace(coordinator_id=None)  # not found yet by the new client
            return attach()

        lc.connect = slow_connect
        with caplog.at_level(logging.INFO, logger="driftline.kafka.consumer"):
            lc._rebuild(clock.t)
            clock.t += 1.1
            lc._housekeeping()
        assert lc.consumer is fresh and "did not run" not in caplog.text
