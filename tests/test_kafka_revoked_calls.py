"""Calls on partitions revoked meanwhile (SRE tryout: after a broker reset a rebalance took partitions away while
a batch was being stored; the next housekeeping asked kafka-python for the high-water mark of one of them and `run`
ended with "unexpected IllegalStateError: Partition is not assigned"). Against a stand-in that refuses calls on
unassigned partitions exactly as kafka-python does, every rebalance ends with each record stored once."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from kafka import TopicPartition as TP
from kafka.errors import IllegalStateError

from driftline.kafka import partition_ops
from driftline.storage.store import Store
from kafka_service_support import assert_same_state, documents, make_events
from test_kafka_loop import Clock, FakeConsumer, member, partitioned, replayed, total


class StrictConsumer(FakeConsumer):
    """FakeConsumer refusing partition calls on partitions it does not hold, as kafka-python 3 does."""

    def assignment(self) -> set[TP]:
        return set(self.assigned)

    def highwater(self, tp: TP) -> int:
        if tp not in self.assigned:
            raise IllegalStateError("Partition is not assigned")
        return super().highwater(tp)

    def pause(self, *tps: TP) -> None:
        for tp in tps:
            if tp not in self.assigned:
                raise KeyError(tp)
        super().pause(*tps)

    def resume(self, *tps: TP) -> None:
        for tp in tps:
            if tp not in self.assigned:
                raise KeyError(tp)
        super().resume(*tps)

    def seek(self, tp: TP, offset: int) -> None:
        if tp not in self.assigned:
            raise ValueError("Unassigned partition")
        super().seek(tp, offset)


def test_the_helpers_skip_partitions_no_longer_assigned() -> None:
    fake = StrictConsumer({TP("p", 0): [], TP("p", 1): []}, store=None)  # type: ignore[arg-type]
    fake.assigned = {TP("p", 0)}
    assert partition_ops.highwater(fake, TP("p", 1)) is None
    partition_ops.pause(fake, [TP("p", 0), TP("p", 1)])
    partition_ops.seek(fake, TP("p", 1), 5)
    partition_ops.resume(fake, [TP("p", 1)])
    assert fake.paused == {TP("p", 0)} and TP("p", 1) not in fake.pos
    with pytest.raises(IllegalStateError):
        fake.highwater(TP("p", 1))  # the stand-in is as strict as kafka-python


@pytest.mark.parametrize("steps_before", [1, 2, 3])
def test_rebalances_while_consuming_never_end_the_loop(tmp_path: Path, steps_before: int, monkeypatch: Any) -> None:
    events = make_events(tmp_path, days=1.0, per_day=1500)
    store = Store(f"sqlite:///{tmp_path / 'live.db'}")
    store.migrate()
    logs = partitioned(events.records)
    clock = Clock()
    lc, _ = member(store, logs, clock, batch=200)
    fake = StrictConsumer(logs, store)
    fake.listener = lc.attach(fake)
    process = lc.pipeline.process_batch

    def slow(*args: Any, **kw: Any) -> Any:
        time.sleep(0.12)  # longer than the overlap's 50 ms wait: the next poll (and its rebalance) comes meanwhile
        return process(*args, **kw)
    monkeypatch.setattr(lc.pipeline, "process_batch", slow)
    everything = set(logs)
    half = {tp for tp in logs if tp.partition == 0}
    fake.rebalance(everything)
    for round_ in range(12):
        for _ in range(steps_before):
            lc.step()
            clock.t += 1.1  # housekeeping (high-water marks, lag) at every step
        fake.rebalance(half if round_ % 2 == 0 else everything)  # delivered in the next poll, stored batch or not
    fake.rebalance(everything)
    for _ in range(300):
        lc.step()
        clock.t += 1.1
        if total(store) == len(events.records):
            break
    lc.step()
    assert total(store) == len(events.records)
    assert_same_state(documents(store.url), replayed(tmp_path, events))
