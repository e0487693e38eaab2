"""What an offset reset skips is counted in records (SRE tryout: with lag ~100k the broker was killed, restarted
empty and the topics recreated; lag went to 0 and 100,757 events were silently gone: the log said only 'stored
position 59777 is beyond the log end (log 0..0)', driftline_consumer_offset_resets_total counted partitions).
Against the in-memory kafka-python stand-in (test_kafka_loop.FakeConsumer)."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
from kafka import TopicPartition as TP

from driftline.kafka.loss import EndsSeen, Skipped, skipped
from driftline.kafka.resets import Problem, recorded_problems
from driftline.storage.store import Store
from kafka_service_support import make_events
from test_kafka_faults import consumer
from test_kafka_loop import TOPICS, Clock, partitioned


def _skipped(lc, topic: str, which: str) -> float:  # type: ignore[no-untyped-def]
    return lc.sig.offset_reset_skipped.labels(topic=topic, log=which)._value.get()


def test_skipped_records_by_problem_and_policy() -> None:
    reset = Problem("beyond_end", 59777, 0, 0, old_end=160534)
    assert skipped(reset, 0) == Skipped(0, 100757)  # earliest on an empty new log: the old tail is the loss
    grown = Problem("beyond_end", 500, 0, 200, old_end=900)
    assert skipped(grown, 200) == Skipped(200, 400) and skipped(grown, 0) == Skipped(0, 400)  # latest / earliest
    assert skipped(Problem("replaced", 50, 0, 80), 80) == Skipped(80, None)  # old end never seen: unknown
    assert skipped(Problem("before_start", 10, 40, 90), 40) == Skipped(30, 0)  # retention: exact
    assert skipped(Problem("before_start", 10, 40, 90), 90) == Skipped(80, 0)
    assert "unknown of the previous log" in Skipped(0, None).describe(None)


def test_ends_seen_keep_the_old_end_through_a_reset_and_distrust_another_epoch() -> None:
    tp = TP("p", 0)
    ends = EndsSeen()
    ends.restart(tp, 100, 500)
    ends.observe(tp, 300, 900)
    ends.observe(tp, 300, 0)  # the new, empty log's end: the old one is kept
    assert ends.old_end(tp, 300) == 900
    assert ends.old_end(tp, 250) is None  # below this process's own position: moved by others since
    assert ends.old_end(TP("p", 1), 5) is None
    ends.observe(tp, 400, 2000, confirmed=False)  # seen before a topic-id read: not yet known to be this log's end
    assert ends.old_end(tp, 400) == 900
    ends.confirm([tp])  # a topic-id read after it showed the same log
    assert ends.old_end(tp, 400) == 2000
    ends.observe(tp, 400, 5000, confirmed=False)
    ends.restart(tp, 0, 10)  # repositioned (the log replaced): the unconfirmed end is gone with it
    ends.confirm([tp])
    assert ends.old_end(tp, 5) == 10


def _lagging(tmp_path: Path, policy: str):  # type: ignore[no-untyped-def]
    """(store, clock, the old logs, live consumer, fake client) after four steps of a consumer under `policy` that
    has read part of a day of events (the set-up of the broker-reset tests)."""
    events = make_events(tmp_path, days=1.0, per_day=1500)
    store = Store(f"sqlite:///{tmp_path / 'live.db'}")
    store.migrate()
    clock = Clock()
    old_logs = partitioned(events.records)
    lc, fake = consumer(store, old_logs, clock, on_offset_reset=policy)
    fake.rebalance(set(old_logs))
    for _ in range(4):
        lc.step()
        clock.t += 1.1
    return store, clock, old_logs, lc, fake


def test_a_broker_reset_under_a_lagging_consumer_counts_the_old_records_never_ingested(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The consumer has read part of the logs; the broker restarts empty with the topics recreated (new logs
    empty): under earliest it resumes at 0 and counts, per topic, old log end − stored position as skipped."""
    store, clock, old_logs, lc, fake = _lagging(tmp_path, "earliest")
    stored = {TP(t, p): n for t in TOPICS.values() for p, n in store.positions(f"kafka:{t}").items()}
    assert stored and any(n < len(old_logs[tp]) for tp, n in stored.items())  # lagging (predictions)
    fake.logs = {tp: [] for tp in old_logs}
    with caplog.at_level(logging.ERROR, logger="driftline.kafka.consumer"):
        for _ in range(4):
            lc.step()
            clock.t += 1.1
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("offset reset:")]
    at_reset = {TP(t, int(p)): int(n) for ln in lines  # a batch in flight may have been stored after `stored`
                for t, p, n in re.findall(r"offset reset: (\w+)\[(\d+)\] stored position (\d+) ", ln)}
    assert set(stored) <= set(at_reset) and len(lines) == len(at_reset)
    for tp, n in at_reset.items():
        assert any(f"{tp.topic}[{tp.partition}] stored position {n} " in ln
                   and f"records skipped: 0 of the log found, {len(old_logs[tp]) - n} of the previous log" in ln
                   for ln in lines), (tp, lines)
    for topic in TOPICS.values():
        lost = sum(len(old_logs[tp]) - n for tp, n in at_reset.items() if tp.topic == topic)
        assert lost > 0 or topic == "o"
        assert _skipped(lc, topic, "previous") == lost, topic
        assert _skipped(lc, topic, "found") == 0
    lc.close()


def test_the_loss_seen_before_a_fail_stop_is_counted_when_a_restart_resolves_it(tmp_path: Path) -> None:
    """Under fail the estimate is recorded with the problem; the restart with latest counts it, plus the whole
    new log it jumps over."""
    store, clock, old_logs, lc, fake = _lagging(tmp_path, "fail")
    new_logs = {tp: old_logs[tp][:3] for tp in old_logs}  # three records each, below every stored position
    fake.logs = new_logs
    for _ in range(4):
        lc.step()
        clock.t += 1.1
    problems = recorded_problems(store, {f"kafka:{t}": t for t in TOPICS.values()})
    stored = {tp: pr.stored for tp, pr in problems.items()}  # a partition not stored before the swap is no reset
    assert stored and all(pr.old_end == len(old_logs[tp]) for tp, pr in problems.items())
    assert set(lc.unresolved) == set(stored) and _skipped(lc, "p", "previous") == 0  # nothing resolved yet
    lc.close()

    lc2, fake2 = consumer(store, new_logs, clock, on_offset_reset="latest")
    fake2.rebalance(set(new_logs))
    for _ in range(3):
        lc2.step()
        clock.t += 1.1
    assert not lc2.unresolved
    for topic in TOPICS.values():
        mine = {tp: n for tp, n in stored.items() if tp.topic == topic}
        assert _skipped(lc2, topic, "previous") == sum(len(old_logs[tp]) - n for tp, n in mine.items())
        assert _skipped(lc2, topic, "found") == 3 * len(mine)
    lc2.close()


def test_a_process_that_never_saw_the_old_log_says_its_loss_is_unknown(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    events = make_events(tmp_path, days=0.5, per_day=1500)
    store = Store(f"sqlite:///{tmp_path / 'live.db'}")
    store.migrate()
    clock = Clock()
    old_logs = partitioned(events.records)
    lc, fake = consumer(store, old_logs, clock)
    fake.rebalance(set(old_logs))
    while not store.positions("kafka:p"):
        lc.step()
    lc.close()
    empty = {tp: [] for tp in old_logs}
    lc2, fake2 = consumer(store, empty, clock, on_offset_reset="earliest")
    fake2.rebalance(set(empty))
    with caplog.at_level(logging.ERROR, logger="driftline.kafka.consumer"):
        for _ in range(3):
            lc2.step()
            clock.t += 1.1
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("offset reset:")]
    assert lines and all("unknown of the previous log" in ln for ln in lines)
    assert _skipped(lc2, "p", "previous") == 0 and _skipped(lc2, "p", "found") == 0
    lc2.close()
