"""The lag of partitions just assigned is known as soon as their positions are (on-call tryout: on a start with a
backlog, `/readyz` said `kafka ok: 4 partitions assigned` with no lag, and `driftline_consumer_lag_messages` held no series
for them, from the assignment until the first batch of 20,000 records was stored: the lag was summed only by the
once-a-second housekeeping, which runs after a batch is stored). Over the in-memory stand-in of test_kafka_loop.py
with a clock that does not move, so the once-a-second housekeeping never comes due by itself."""

from __future__ import annotations

from pathlib import Path

from driftline.storage.store import Store
from kafka_service_support import make_events
from test_kafka_loop import Clock, member, partitioned, total


def _lag_series(lc: object) -> dict[tuple[str, str], float]:
    fam = next(f for f in lc.ops.registry.collect() if f.name == "driftline_consumer_lag_messages")  # type: ignore[attr-defined]
    return {(s.labels["topic"], s.labels["partition"]): s.value for s in fam.samples}


def test_lag_is_known_once_positioned_before_the_first_batch_is_stored(tmp_path: Path) -> None:
    events = make_events(tmp_path, days=0.5, per_day=1500)
    store = Store(f"sqlite:///{tmp_path / 'live.db'}")
    store.migrate()
    logs = partitioned(events.records)
    clock = Clock()
    lc, fake = member(store, logs, clock)
    lc.step()  # nothing assigned: the housekeeping of this second ran
    fake.rebalance(set(logs))
    lc.step()  # the assignment, and the partitions positioned at their stored positions (none: the log start)
    assert lc.expected and not lc.pending and lc.stored_batches == 0 and total(store) == 0
    ok, why = lc.ready()
    assert ok and why.endswith(f"lag {len(events.records)}"), why
    assert _lag_series(lc) == {(tp.topic, str(tp.partition)): float(len(log)) for tp, log in logs.items()}
    clock.t += 1.1
    lc.step()  # the first batch, and the housekeeping of the next second: the lag goes down with it
    assert lc.stored_batches == 1 and lc.ready()[1].endswith(f"lag {len(events.records) - total(store)}")
    store.close()
