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


def _assigned(tmp_path: Path) -> tuple[Any, Store, Any, Any, Clock, Withholding]:
    """A day of events in partitioned logs and a member assigned and positioned on them (nothing polled yet):
    (events, store, logs, member, clock, the withholding stand-in)."""
    events = make_events(tmp_path, days=1.0, per_day=1500)
    store = Store(f"sqlite:///{tmp_path / 'live.db'}")
    store.migrate()
    logs = partitioned(events.records)
    clock = Clock()
    lc, _ = member(store, logs, clock)
    fake = Withholding(logs, store)
    fake.listener = lc.attach(fake)
    fake.rebalance(set(logs))
    lc.step()
    return events, store, logs, lc, clock, fake


def _step_until_stored(lc: Any, clock: Clock, store: Store, records: int) -> None:
    """Step the member, 1.1 s apart on its clock, until `records` are stored (at most 200 steps)."""
    for _ in range(200):
        lc.step()
        clock.t += 1.1
        if total(store) == records:
            break


@pytest.mark.parametrize("hold", [0, 3, UNREAD_POLLS + 5])
def test_partitions_not_read_yet_are_read_alone_and_everything_is_stored_once(tmp_path: Path, hold: int) -> None:
    """hold 0 and 3: every record delivered once (the old code gave the first batch back and read it again);
    beyond the polls allowed: given back and read again, the end state still that of the replay."""
    events, store, logs, lc, clock, fake = _assigned(tmp_path)  # assigned and positioned: nothing polled yet
    assert lc.expected and not lc.pending and fake.delivered == 0
    fake.hold = hold
    _step_until_stored(lc, clock, store, len(events.records))
    assert total(store) == len(events.records)
    if hold <= 3:
        assert fake.delivered == len(events.records)
    else:
        assert fake.delivered > len(events.records)  # the first batch was given back and read again
    assert_same_state(documents(store.url), replayed(tmp_path, events))
    store.close()


def test_a_batch_with_the_unread_partitions_added_stays_within_the_batch_bounds(tmp_path: Path) -> None:
    """Every stored batch holds at most kafka.batch_max_records records (live batches stay small: the earlier
    merge stored 7,889 live records in 17 batches of batch_max_records 400), nothing is polled twice, and the end
    state is the replay's."""
    events, store, _, lc, clock, fake = _assigned(tmp_path)  # batch_max_records 300
    assert fake.delivered == 0  # every batch is counted below
    sizes: list[int] = []
    process = lc.pipeline.process_batch

    def counted(raws: Any, *args: Any, **kwargs: Any) -> Any:
        sizes.append(len(raws))
        return process(raws, *args, **kwargs)

    lc.pipeline.process_batch = counted  # type: ignore[method-assign]
    _step_until_stored(lc, clock, store, len(events.records))
    assert total(store) == len(events.records) and fake.delivered == len(events.records)
    assert sizes and max(sizes) <= 300 and len(sizes) >= len(events.records) / 300
    assert_same_state(documents(store.url), replayed(tmp_path, events))
    store.close()


def test_a_partition_that_never_delivers_costs_one_give_back(tmp_path: Path) -> None:
    """A partition with records left whose fetch returns nothing (an open transaction under read_committed) until
    it is `stuck` (alignment.IDLE_S): the batch is given back once, not at every step, and every record is still
    stored once it delivers."""
    events, store, logs, lc, clock, fake = _assigned(tmp_path)
    given_back: list[int] = []
    give_back = lc._give_back_unread

    def counted(batch: Any, now: float) -> None:
        given_back.append(sum(map(len, batch.values())))
        give_back(batch, now)

    lc._give_back_unread = counted  # type: ignore[method-assign]
    fake.hold = 10 ** 6
    for _ in range(40):  # 44 s of steps: past IDLE_S
        lc.step()
        clock.t += 1.1
    assert len(given_back) == 1
    fake.hold = 0
    _step_until_stored(lc, clock, store, len(events.records))
    assert total(store) == len(events.records)
    assert_same_state(documents(store.url), replayed(tmp_path, events))
    store.close()


def test_share_keeps_every_partition_first_records_within_the_bounds() -> None:
    """share: the same cap for each partition, at least one record each, within the records and bytes bounds; the
    rest continues where the kept records end."""
    from types import SimpleNamespace

    from driftline.kafka.unread import share

    def recs(n: int, size: int = 10) -> list[Any]:
        return [SimpleNamespace(offset=o, value=b"x" * size) for o in range(n)]

    a, b, c = TP("p", 0), TP("p", 1), TP("o", 0)
    batch = {a: recs(300), b: recs(5), c: recs(40)}
    kept, rest = share(batch, 300, 10 ** 9)
    assert [len(kept[tp]) for tp in (a, b, c)] == [255, 5, 40] and set(rest) == {a}
    assert [r.offset for r in kept[a] + rest[a]] == list(range(300))
    kept, rest = share(batch, 300, 300)  # 30 records of 10 bytes: the cap 12 leaves room for one more (_top_up)
    assert [len(kept[tp]) for tp in (a, b, c)] == [13, 5, 12]
    assert share(batch, 2, 10 ** 9)[0] == {a: batch[a][:1], b: batch[b][:1], c: batch[c][:1]}
    small = {a: recs(3), b: recs(4)}
    assert share(small, 300, 10 ** 9) == (small, {})


def test_share_fills_the_batch_to_exactly_batch_max_records() -> None:
    """On-call tryout: the first batch after an assignment held 19,999 records with batch_max_records 20,000. A
    common cap per partition leaves room an odd remainder cannot use (2 × 9,974 + 51); the first partitions with
    more get one record more, so the batch holds exactly the bound, and the rest continues where each one's ends."""
    from types import SimpleNamespace

    from driftline.kafka.unread import share

    def recs(n: int, size: int = 300) -> list[Any]:
        return [SimpleNamespace(offset=o, value=b"x" * size) for o in range(n)]

    a, b, c = TP("p", 0), TP("p", 1), TP("o", 0)
    batch = {a: recs(15_000), b: recs(10_000), c: recs(51)}
    kept, rest = share(batch, 20_000, 1 << 30)
    assert sum(map(len, kept.values())) == 20_000
    assert [len(kept[tp]) for tp in (a, b, c)] == [9_975, 9_974, 51] and set(rest) == {a, b}
    for tp in (a, b):
        assert [r.offset for r in kept[tp] + rest[tp]] == list(range(len(batch[tp])))
    six = {TP("p", i): recs(4_000) for i in range(6)}  # 20,000 / 6: a common cap alone keeps 19,998
    assert sum(map(len, share(six, 20_000, 1 << 30)[0].values())) == 20_000
    kept, _ = share(batch, 20_000, 300 * 19_999)  # the bytes bound wins: one record fewer, never more
    assert sum(map(len, kept.values())) == 19_999
