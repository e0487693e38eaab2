"""A partition held by an unresolved offset reset (kafka.on_offset_reset: fail), fourth SRE tryout: its lag was
computed from the position stored for the old log (0 or too small, so DriftlineConsumerLagHigh could never fire
although nothing was consumed). Against the in-memory kafka-python stand-in with topic ids; the owner and a
process that owns nothing must export the same lag."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kafka import TopicPartition as TP

from driftline.kafka.consumer import LiveConsumer
from driftline.kafka.lag import lags_from
from driftline.storage.store import Store
from test_kafka_faults import renamed
from test_kafka_log_ids import _consumer, _old_stream_consumed
from test_kafka_loop import Clock, partitioned, total
from kafka_service_support import make_events


def _lags(lc: LiveConsumer) -> dict[tuple[str, int], float]:
    return {(s.labels["topic"], int(s.labels["partition"])): s.value for m in lc.ops.registry.collect()
            if m.name == "driftline_consumer_lag_messages" for s in m.samples}


def _steps(lc: LiveConsumer, clock: Clock, n: int = 8) -> None:
    for _ in range(n):
        lc.step()
        clock.t += 1.1


def _held_by_fail(tmp_path: Path, longer: bool) -> tuple[Store, Clock, dict[str, str | None], dict[TP, list[Any]],
                                                         LiveConsumer, Any, int]:
    """The old stream consumed, then the topics replaced (new ids) by a stream longer or shorter than the old one,
    and a member restarted under `fail` owning every partition: all of them held unresolved."""
    old, new, store, clock, ids, lc, fake = _old_stream_consumed(tmp_path)
    lc.close()
    if not longer:
        (tmp_path / "short").mkdir()
        new = renamed(make_events(tmp_path / "short", days=0.2, per_day=1500, seed=7), "s-")
    new_logs = partitioned(new)
    ids.update(p="id-p-2", o="id-o-2")
    lc, fake = _consumer(store, new_logs, clock, ids, on_offset_reset="fail")
    fake.rebalance(set(new_logs))
    _steps(lc, clock)
    assert total(store) == len(old.records) and set(lc.unresolved) == set(new_logs)
    return store, clock, ids, new_logs, lc, fake, len(old.records)


def test_lag_of_a_partition_held_by_an_unresolved_reset_is_its_whole_new_log(tmp_path: Path) -> None:
    """Replaced logs longer than the old ones (stored positions inside them) and shorter ones (positions beyond
    their end): the lag is every record of the new log, end − log start, not end − the old log's position; a
    process owning nothing reads the recorded problem from the database and exports the same."""
    for longer in (True, False):
        (tmp_path / str(longer)).mkdir()
        store, clock, ids, new_logs, lc, fake, _ = _held_by_fail(tmp_path / str(longer), longer)
        stored = {tp: store.positions(f"kafka:{tp.topic}")[tp.partition] for tp in new_logs}
        assert all((len(new_logs[tp]) > stored[tp]) is longer for tp in new_logs)
        want = {(tp.topic, tp.partition): float(len(v)) for tp, v in new_logs.items()}
        assert _lags(lc) == want
        assert lc.status.lag == sum(map(len, new_logs.values()))
        standby, _ = _consumer(store, new_logs, clock, ids, on_offset_reset="fail")  # owns nothing
        _steps(standby, clock, 2)
        assert _lags(standby) == want
        fake.starts = {tp: 3 for tp in new_logs}  # retention deleted the new log's first records
        clock.t += 6
        lc.step()
        assert _lags(lc) == {k: v - 3 for k, v in want.items()}


def test_lags_from_counts_the_whole_log_of_a_partition_held_by_a_reset() -> None:
    ends = {TP("p", 0): 40, TP("p", 1): 9, TP("p", 2): 50}
    stored = {"p": {0: 30, 1: 12, 2: 3}}
    assert lags_from(ends, stored, {}) == {("p", 0): 10, ("p", 1): 0, ("p", 2): 47}
    held = {TP("p", 0): 5, TP("p", 1): 2, TP("p", 2): 7}  # log starts of partitions held by a recorded reset
    # replaced (position inside the new log), beyond its end, and before its start (retention): end − start,
    # and never less than end − the stored position
    assert lags_from(ends, stored, {}, held) == {("p", 0): 35, ("p", 1): 7, ("p", 2): 47}


def test_the_text_of_a_recorded_reset_shows_the_current_log_range_and_the_one_found_with_its_time(
        tmp_path: Path) -> None:
    """/readyz said 'log 0..0' (the range seen when the reset was found) after the new log had grown to thousands
    of records. It shows the range now, re-checked with the lag every 5 s and on every assignment, and the range
    when found with the time; the database keeps one record per partition (nothing recorded again)."""
    for longer in (True, False):
        (tmp_path / str(longer)).mkdir()
        store, clock, ids, new_logs, lc, fake, _ = _held_by_fail(tmp_path / str(longer), longer)
        tp = TP("o", 0)  # /readyz describes the first held partition, names the others
        found = len(new_logs[tp])
        grown = found + min(found, 50)
        ok, why = lc.ready()
        assert not ok and f"0..{found})" in why and "when found" not in why
        assert "on 4 partitions" in why and why.count("stored position") == 1 and "also stopped: " in why
        records = store.meta_prefixed("offset_reset:")
        assert len(records) == 4
        for logged in new_logs.values():
            logged.extend(logged[:50])  # the new log grows; nothing of it is consumed
        _steps(lc, clock)
        why = lc.ready()[1]
        assert f"{tp.topic}[0] stored position" in why and f"0..{grown} now" in why
        assert "when found at 2030-03-17T17:46:40Z" in why and f"0..{found}" in why and f"0..{found})" not in why
        restarted, fake2 = _consumer(store, new_logs, clock, ids, on_offset_reset="fail")
        fake2.rebalance(set(new_logs))
        _steps(restarted, clock, 2)
        assert f"0..{grown} now" in restarted.ready()[1]
        assert restarted.sig.offset_resets.labels(topic="p", problem="replaced" if longer else "beyond_end",
                                                  policy="fail")._value.get() == 0  # re-checked, not found again
        assert store.meta_prefixed("offset_reset:") == records
        for logged in new_logs.values():
            del logged[3:]  # the log reset again while held: it ends below its end when found
        _steps(restarted, clock)
        why = restarted.ready()[1]
        assert (f"0..3 now, 0..{found} when found at 2030-03-17T17:46:40Z; reset again since" if longer else
                f"(log 0..{found} then, 0..3 now; reset again since)") in why, why


def test_readiness_names_the_other_held_partitions_only_so_its_text_stays_short() -> None:
    """/readyz gave every held partition's full description (2.5 kB for 8 partitions, growing with the count): the
    first is described, the others named, at most ten."""
    from driftline.kafka.resets import unresolved_reason

    held = {TP(t, p): f"{t}[{p}] stored position 1000 is beyond the log end (log 0..12): the topic or the broker "
                       "was reset" for t in ("outcomes", "predictions") for p in range(32)}
    why = unresolved_reason(held)
    assert why.startswith("offset reset unresolved on 64 partitions") and len(why) < 600
    assert "outcomes[0] stored position 1000" in why and why.count("stored position") == 1
    assert "also stopped: outcomes[1], outcomes[2]," in why and "outcomes[10] and 53 more" in why
    one = unresolved_reason({TP("p", 3): "p[3] stored position 9 is before the log start"})
    assert one.endswith("on 1 partition (kafka.on_offset_reset: fail; restart with earliest or latest to resume): "
                        "p[3] stored position 9 is before the log start")
