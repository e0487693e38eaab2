"""A replaced log told by its topic id, not by offsets (second SRE tryout: one record skipped after a broker reset
whose new log had refilled up to the stored position before driftline looked). Against the in-memory kafka-python
stand-in with topic ids: a restart after the topic was recreated and refilled past the stored positions, and a
topic replaced under a running consumer. The real broker: test_kafka_fault_service.py."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from kafka import TopicPartition as TP

from driftline.config import Config, Kafka
from driftline.ingest.pipeline import Pipeline
from driftline.kafka.consumer import LiveConsumer
from driftline.kafka.health import Backoff
from driftline.kafka.log_ids import current_ids, meta_key, replaced
from driftline.kafka.resets import Problem, place
from driftline.kafka.settings import resolve
from driftline.storage.store import Store
from kafka_service_support import Events, assert_same_state, documents, make_events
from test_kafka_faults import drain, renamed
from test_kafka_loop import TOPICS, Clock, FakeConsumer, partitioned, replayed, total


class _Metadata:
    """Topic ids as a client sees them: the broker's (`live`) when it asks (refresh), else the last ones it saw
    (kafka-python refreshes on errors or every 5 minutes; a topic replaced while nothing failed stays unseen)."""

    def __init__(self, live: dict[str, str | None]) -> None:
        self.live, self.seen = live, dict(live)

    def __call__(self, topics: set[str], refresh: bool) -> dict[str, str | None]:
        if refresh:
            self.seen = dict(self.live)
        return {t: self.seen.get(t) for t in topics}


def _consumer(store: Store, logs: Any, clock: Clock, ids: dict[str, str | None], **kafka: Any
              ) -> tuple[LiveConsumer, FakeConsumer]:
    section = Kafka(predictions_topic="p", outcomes_topic="o", batch_max_records=300, **kafka)
    fake = FakeConsumer(logs, store)
    lc = LiveConsumer(Pipeline(Config(kafka=section), store, clock=lambda: 1.9e9), resolve(section, "fake:1", {}),
                      threading.Event(), db_backoff=Backoff(1.0, 4.0), monotonic=clock, maintain_every_s=1e9,
                      records_exist=lambda wanted: {tp for tp, off in wanted.items() if off < len(fake.logs[tp])},
                      topic_ids=_Metadata(ids))
    fake.listener = lc.attach(fake)
    return lc, fake


def _streams(tmp_path: Path) -> tuple[Events, list[tuple[str, bytes, bytes]]]:
    """An old stream and a longer new one (new ids): every new partition log ends past the old one's position."""
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    old = make_events(tmp_path / "old", days=0.5, per_day=1500)
    new = renamed(make_events(tmp_path / "new", days=1.0, per_day=1500, seed=5), "n-")
    return old, new


def _old_stream_consumed(tmp_path: Path) -> tuple[Events, list[tuple[str, bytes, bytes]], Store, Clock,
                                                    dict[str, str | None], LiveConsumer, FakeConsumer]:
    """The old stream consumed to its end under topic ids id-p-1/id-o-1 (the new stream not yet in the logs)."""
    old, new = _streams(tmp_path)
    store = Store(f"sqlite:///{tmp_path / 'live.db'}")
    store.migrate()
    clock = Clock()
    ids: dict[str, str | None] = {"p": "id-p-1", "o": "id-o-1"}
    lc, fake = _consumer(store, partitioned(old.records), clock, ids)
    fake.rebalance(set(fake.logs))
    drain(lc, clock, store, len(old.records))
    return old, new, store, clock, ids, lc, fake


def _counted(store: Store) -> int:
    return sum(v for (n, _), v in store.counters().items() if n in ("events", "dead_letters"))


def _assert_every_event_once(tmp_path: Path, store: Store, old: Events, new: list[tuple[str, bytes, bytes]],
                             new_logs: dict[TP, list[Any]]) -> None:
    assert {(t, p): n for t in TOPICS.values() for p, n in store.positions(f"kafka:{t}").items()} == {
        (tp.topic, tp.partition): len(v) for tp, v in new_logs.items()}
    assert _counted(store) == len(old.records) + len(new)  # nothing of the new log skipped, nothing twice
    both = tmp_path / "both.jsonl"
    both.write_bytes(b"".join(p + b"\n" for _, _, p in old.records + new))
    assert_same_state(documents(store.url), replayed(tmp_path, Events(both, old.records + new)))


def test_place_treats_a_replaced_log_as_a_reset_whatever_its_offsets() -> None:
    early = place(3, 0, 40, "earliest", replaced=True)
    assert early.problem == Problem("replaced", 3, 0, 40) and early.seek == 0 and early.move_to == 0
    assert place(3, 0, 40, "latest", replaced=True).seek == 40
    stopped = place(3, 0, 40, "fail", replaced=True)
    assert stopped.seek is None and stopped.problem is not None and stopped.problem.kind == "replaced"
    assert "replaced" in stopped.problem.describe("p", 0) and "reset" in stopped.problem.describe("p", 0)
    assert place(None, 0, 40, "fail", replaced=True).seek == 0  # never read: nothing to lose
    # where the offsets already show the reset, it is named as before topic ids (dashboards and alerts keep it)
    assert place(50, 0, 40, "earliest", replaced=True).problem == Problem("beyond_end", 50, 0, 40)
    assert place(2, 5, 40, "earliest", replaced=True).problem == Problem("before_start", 2, 5, 40)
    assert place(3, 0, 40, "fail").problem is None  # same log: the stored position holds
    assert replaced("a", "b") and not replaced("a", "a") and not replaced(None, "b") and not replaced("a", None)


def test_current_ids_read_the_clients_metadata_and_an_all_zero_id_is_none() -> None:
    import uuid
    from types import SimpleNamespace

    known = {"p": uuid.UUID(int=5), "o": uuid.UUID(int=0)}
    refreshed = []
    client = SimpleNamespace(cluster=SimpleNamespace(topic_id=known.get))
    consumer = SimpleNamespace(_client=client, topics=lambda: refreshed.append(1))
    assert current_ids(consumer, ["p", "o", "x"], True) == {"p": str(uuid.UUID(int=5)), "o": None, "x": None}
    assert refreshed == [1] and current_ids(consumer, ["p"], False) and refreshed == [1]
    assert current_ids(SimpleNamespace(), ["p"], True) == {"p": None}  # a client without ids: offsets only


def test_restart_after_the_topic_was_recreated_and_refilled_past_the_position_stores_every_new_event(
        tmp_path: Path) -> None:
    """Offsets alone resumed at the stored positions inside the new log and skipped its first records; the
    topic id stored with each position says the log was replaced: under `fail` the partitions stop (nothing
    stored), under `earliest` every event of the new log is stored exactly once."""
    old, new, store, clock, ids, lc, fake = _old_stream_consumed(tmp_path)
    assert total(store) == len(old.records) and store.meta(meta_key("kafka:p", 0)) == "id-p-1"
    lc.close()
    new_logs = partitioned(new)
    assert all(len(new_logs[tp]) > store.positions(f"kafka:{tp.topic}")[tp.partition] for tp in new_logs)
    ids.update(p="id-p-2", o="id-o-2")

    lc, fake = _consumer(store, new_logs, clock, ids, on_offset_reset="fail")
    fake.rebalance(set(new_logs))
    for _ in range(5):
        lc.step()
        clock.t += 1.1
    assert total(store) == len(old.records) and _counted(store) == len(old.records)
    ok, why = lc.ready()
    assert not ok and "was replaced" in why
    assert lc.sig.offset_resets.labels(topic="p", problem="replaced", policy="fail")._value.get() == 2
    lc.close()

    lc, fake = _consumer(store, new_logs, clock, ids, on_offset_reset="earliest")
    fake.rebalance(set(new_logs))
    drain(lc, clock, store, sum(map(len, new_logs.values())))
    assert lc.ready()[0] and store.meta(meta_key("kafka:o", 1)) == "id-o-2"
    _assert_every_event_once(tmp_path, store, old, new, new_logs)


def test_a_topic_replaced_under_a_running_consumer_is_read_from_its_start(tmp_path: Path, caplog: Any) -> None:
    """The logs are replaced while the consumer keeps its partitions (no rebalance, no fetch error: the fetch
    position lies inside the new, longer log, and the client's metadata still holds the old ids: third tryout, a
    paused process or a database outage). The metadata asked for before the next batch shows the new topic id:
    nothing of the batch is stored (said so), the positions are checked again and, under `earliest`, the new log
    is read from its start."""
    caplog.set_level("INFO", logger="driftline")
    old, new, store, clock, ids, lc, fake = _old_stream_consumed(tmp_path)
    new_logs = partitioned(new)
    fake.logs = new_logs
    ids.update(p="id-p-2", o="id-o-2")
    drain(lc, clock, store, sum(map(len, new_logs.values())))
    assert lc.sig.offset_resets.labels(topic="p", problem="replaced", policy="earliest")._value.get() == 2
    assert "the topic's id changed" in caplog.text and "belongs to a log that was replaced" in caplog.text
    assert "fetched records of" in caplog.text and "not stored" in caplog.text
    _assert_every_event_once(tmp_path, store, old, new, new_logs)
    lc.close()


def test_a_log_replaced_while_the_process_was_stopped_reports_no_loss_of_the_old_log(tmp_path: Path,
                                                                                      caplog: Any) -> None:
    """SRE tryout: `run` stopped (SIGSTOP) with lag 0, the broker restarted empty, the topics recreated and refilled
    past the stored positions, then `run` continued. Its first housekeeping read the new logs' ends before any
    batch's topic-id check and kept them as the old logs' ends: 'records skipped: … 998 of the previous log (never
    ingested …)', driftline_consumer_offset_reset_skipped_records_total{log="previous"} 8,601, nothing lost. An
    end now counts as the old log's only once a topic-id read after it has shown the same log."""
    caplog.set_level("INFO", logger="driftline")
    old, new, store, clock, ids, lc, fake = _old_stream_consumed(tmp_path)
    fake.logs = partitioned(new)
    ids.update(p="id-p-2", o="id-o-2")
    lc.next_housekeeping = 0.0
    lc._housekeeping()  # the first pass after the process continues: the fetched ends are the new logs'
    drain(lc, clock, store, sum(map(len, fake.logs.values())))
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("offset reset:")]
    assert len(lines) == 4 and all("records skipped: 0 of the log found, 0 of the previous log" in ln
                                   for ln in lines), lines
    for topic in TOPICS.values():
        assert lc.sig.offset_reset_skipped.labels(topic=topic, log="previous")._value.get() == 0
    _assert_every_event_once(tmp_path, store, old, new, fake.logs)
    lc.close()
