"""The lag series of a partition that leaves this member's positions (a reset found, a revoked or re-checked
partition) while the broker cannot be asked: CI, broker restarted empty under `fail`, the stopped partitions
showed lag 2931 — the whole old stream, from a lag sample taken while it was still a backlog — instead of their
new log (484). The sample of every partition is kept up to date with the member's own lag of it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kafka.errors import KafkaTimeoutError

from driftline.storage.store import Store
from kafka_service_support import make_events
from test_kafka_log_ids import _consumer
from test_kafka_loop import Clock, partitioned, total


def _lag_series(lc: object, topic: str) -> float:
    registry = lc.ops.registry  # type: ignore[attr-defined]
    return sum(s.value for m in registry.collect() if m.name == "driftline_consumer_lag_messages"
               for s in m.samples if s.labels["topic"] == topic)


@contextmanager
def _live(tmp_path: Path) -> Iterator[tuple[Any, Any, Store, Clock, int]]:
    """(consumer, its kafka-python stand-in, store, clock, events in the logs) over a fresh SQLite store, every
    partition just assigned; closed afterwards."""
    events = make_events(tmp_path, days=0.2, per_day=1500)
    store = Store(f"sqlite:///{tmp_path / 'live.db'}")
    store.migrate()
    clock = Clock()
    logs = partitioned(events.records)
    lc, fake = _consumer(store, logs, clock, {"p": "id-p", "o": "id-o"})
    try:
        fake.rebalance(set(logs))
        yield lc, fake, store, clock, len(events.records)
    finally:
        lc.close()
        store.close()


def test_a_partition_leaving_the_positions_does_not_show_a_backlog_sample_from_before(tmp_path: Path) -> None:
    """The lag refresh (every 5 s) sampled the backlog before it was stored; the partitions were stored within
    those 5 s (their own lag: 0), then re-checked (popped from the positions) while the log ends could not be
    asked: the series showed the old backlog again until a refresh succeeded."""
    with _live(tmp_path) as (lc, fake, store, clock, n):
        sampled = False
        for _ in range(40):  # no clock step: a single lag refresh (the one right after positioning)
            lc.step()
            sampled = sampled or _lag_series(lc, "p") > 0
            if total(store) == n and not lc.pending:
                break
        assert total(store) == n
        assert sampled, "the refresh after positioning saw no backlog: the test does not set up the stale sample"
        lc._housekeeping()
        assert _lag_series(lc, "p") == 0

        def unanswered(*_: object, **__: object) -> dict:
            raise KafkaTimeoutError("broker restarting")

        fake.end_offsets = unanswered  # the refresh fails: its sample stays
        lc._recheck({tp for tp in lc.owned if tp.topic == "p"}, "the log end fell below the stored position")
        clock.t += 6.0  # a refresh is due (and fails)
        lc._housekeeping()
        assert _lag_series(lc, "p") == 0  # the last lag known of them, not the backlog of before they were stored


def test_the_lag_is_asked_again_as_soon_as_the_broker_is_back(tmp_path: Path) -> None:
    """SRE tryout: after a broker came back (restarted empty), the lag series showed the lag sampled before the
    outage for up to 4.6 s, until the next 5 s refresh. The refresh runs in the first housekeeping that finds the
    broker back."""
    with _live(tmp_path) as (lc, fake, store, clock, n):
        for _ in range(40):
            lc.step()
            clock.t += 1.1
            if total(store) == n and not lc.pending:
                break
        assert total(store) == n
        clock.t += 6.0
        lc._housekeeping()  # a refresh of every partition: nothing left to read
        assert _lag_series(lc, "p") == 0
        fake._coordinator.coordinator_id = None  # the broker is gone
        clock.t += 1.1
        lc._housekeeping()
        assert not lc.status.broker_ok
        for tp in [tp for tp in fake.logs if tp.topic == "p"]:  # meanwhile 25 new records each, not yet fetched
            fake.logs[tp] = fake.logs[tp] + fake.logs[tp][:25]
        lc._recheck({tp for tp in lc.owned if tp.topic == "p"}, "the log end fell below the stored position")
        fake._coordinator.coordinator_id = "coordinator-1"  # back, 2.2 s after the last refresh
        clock.t += 1.1
        lc._housekeeping()
        assert lc.status.broker_ok
        assert _lag_series(lc, "p") == 50
