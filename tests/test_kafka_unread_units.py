"""The wait for partitions not read yet (kafka/unread.py) in the consumer loop over the in-memory stand-in for
kafka-python of test_kafka_loop.py: the first batch of a backlog holds one partition only (the stand-in fills a
poll partition by partition); the others are read alone and nothing is polled twice, unless one of them does not
deliver within the polls allowed: then the batch is given back as before, and every record is still stored once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kafka import TopicPartition as TP

from driftline.kafka.unread import UNREAD_POLLS
from driftline.storage.store import Store
from kafka_service_support import assert_same_state, documents, make_events
from test_kafka_loop import Clock, FakeConsumer, member, partitioned, replayed, total


class Withholding(FakeConsumer):
    """Delivers nothing of `slow` for the next `hold` polls (a fetch that takes long), counts records delivered."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.slow, self.hold, self.delivered = TP("p", 1), 0, 0

    def poll(self, timeout_ms: int = 0, max_records: int | None = None) -> dict[TP, list[Any]]:
        hiding = self.hold > 0 and not self.queued and self.slow not in self.paused
        if hiding:
            self.hold -= 1
            self.paused.add(self.slow)
        try:
            out = super().poll(timeout_ms, max_records)
        finally:
            if hiding:
                self.paused.discard(self.slow)
        self.delivered += sum(map(len, out.values()))
        return out


@pytest.mark.parametrize("hold", [0, 3, UNREAD_POLLS + 5])
def test_partitions_not_read_yet_are_read_alone_and_everything_is_stored_once(tmp_path: Path, hold: int) -> None:
    """hold 0 and 3: every record delivered once (the old code gave the first batch back and read it again);
    beyond the polls allowed: given back and read again, the end state still that of the replay."""
    events = make_events(tmp_path, days=1.0, per_day=1500)
    store = Store(f"sqlite:///{tmp_path / 'live.db'}")
    store.migrate()
    logs = partitioned(events.records)
    clock = Clock()
    lc, _ = member(store, logs, clock)
    fake = Withholding(logs, store)
    fake.listener = lc.attach(fake)
    fake.rebalance(set(logs))
    lc.step()  # assigned and positioned: nothing polled yet
    assert lc.expected and not lc.pending and fake.delivered == 0
    fake.hold = hold
    for _ in range(200):
        lc.step()
        clock.t += 1.1
        if total(store) == len(events.records):
            break
    assert total(store) == len(events.records)
    if hold <= 3:
        assert fake.delivered == len(events.records)
    else:
        assert fake.delivered > len(events.records)  # the first batch was given back and read again
    assert_same_state(documents(store.url), replayed(tmp_path, events))
    store.close()
