"""Issue 14 parts 2-5 against the in-memory kafka-python stand-in (deterministic): stored positions outside the
log (a broker/topic reset, retention) under each kafka.on_offset_reset policy, key checks, lag of partitions
this process does not own, readiness tied to owning partitions. The real broker: test_kafka_fault_service.py."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from kafka import TopicPartition as TP

from driftline.config import Config, Kafka
from driftline.ingest.pipeline import Pipeline
from driftline.kafka.assignment import source_of
from driftline.kafka.consumer import LiveConsumer
from driftline.kafka.health import Backoff
from driftline.kafka.resets import Problem, place
from driftline.kafka.settings import resolve
from driftline.storage.store import Store
from kafka_service_support import Events, assert_same_state, documents, make_events
from test_kafka_loop import TOPICS, Clock, FakeConsumer, partitioned, replayed, total


def consumer(store: Store, logs: Any, clock: Clock, **kafka: Any) -> tuple[LiveConsumer, FakeConsumer]:
    section = Kafka(predictions_topic="p", outcomes_topic="o", batch_max_records=300, **kafka)
    settings = resolve(section, "fake:1", {})
    config = Config(kafka=section)
    fake = FakeConsumer(logs, store)
    lc = LiveConsumer(Pipeline(config, store, clock=lambda: 1.9e9), settings, threading.Event(),
                      db_backoff=Backoff(1.0, 4.0), monotonic=clock, maintain_every_s=1e9,
                      records_exist=lambda wanted: {tp for tp, off in wanted.items() if off < len(fake.logs[tp])})
    fake.listener = lc.attach(fake)
    return lc, fake


def drain(lc: LiveConsumer, clock: Clock, store: Store, want: int, steps: int = 300) -> None:
    for _ in range(steps):
        lc.step()
        clock.t += 1.1
        if total(store) == want:
            break
    lc.step()


def renamed(events: Events, prefix: str) -> list[tuple[str, bytes, bytes]]:
    """The same stream with every prediction id prefixed (new events, as a producer would send after a reset)."""
    out = []
    for kind, key, payload in events.records:
        try:
            ev = json.loads(payload)
        except ValueError:
            out.append((kind, key, payload))
            continue
        if isinstance(ev, dict) and "prediction_id" in ev:
            ev["prediction_id"] = prefix + ev["prediction_id"]
            key = ev["prediction_id"].encode()
            payload = json.dumps(ev, separators=(",", ":")).encode()
        out.append((kind, key, payload))
    return out


def test_place_decides_each_case_and_a_recorded_problem_stays_one() -> None:
    assert place(None, 5, 9, "fail").seek == 5 and place(None, 5, 9, "fail").expected == 0
    assert place(7, 5, 9, "fail").seek == 7 and place(7, 5, 9, "fail").problem is None
    fail = place(12, 0, 9, "fail")
    assert fail.seek is None and fail.problem == Problem("beyond_end", 12, 0, 9)
    assert place(12, 0, 9, "earliest").seek == 0 and place(12, 0, 9, "earliest").move_to == 0
    assert place(12, 0, 9, "latest").seek == 9
    early = place(2, 5, 9, "earliest")
    assert early.problem == Problem("before_start", 2, 5, 9) and early.seek == 5 and early.move_to == 5
    # the new log has grown past the stored position since the problem was recorded: still a problem
    later = place(12, 0, 40, "earliest", recorded=Problem("beyond_end", 12, 0, 9))
    assert later.seek == 0 and later.problem is not None


def test_broker_reset_is_an_error_under_fail_and_earliest_stores_every_new_event_once(tmp_path: Path) -> None:
    """A broker restarted empty: the stored positions are above the new log ends. Policy `fail` stops the
    partitions with an error (log, metric, /readyz) and stores nothing; a restart with `earliest` stores every
    event of the new log exactly once: the state equals replay of the old and the new events."""
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    old = make_events(tmp_path / "old", days=1.0, per_day=1500)
    new_records = renamed(make_events(tmp_path / "new", days=0.5, per_day=1500, seed=5), "n-")
    store = Store(f"sqlite:///{tmp_path / 'live.db'}")
    store.migrate()
    clock = Clock()
    lc, fake = consumer(store, partitioned(old.records), clock, on_offset_reset="fail")
    fake.rebalance(set(fake.logs))
    drain(lc, clock, store, len(old.records))
    assert total(store) == len(old.records)
    new_logs = partitioned(new_records)
    assert all(len(new_logs[tp]) < len(fake.logs[tp]) for tp in new_logs)  # new ends below stored positions
    fake.logs = new_logs
    fake.rebalance(set(new_logs))
    for _ in range(5):
        lc.step()
        clock.t += 1.1
    assert total(store) == len(old.records)  # nothing of the new log stored, nothing silently skipped
    ok, why = lc.ready()
    assert not ok and "offset reset unresolved" in why and "beyond the log end" in why
    assert lc.sig.offset_unresolved.labels(topic="p", partition="0")._value.get() == 1
    assert lc.sig.offset_resets.labels(topic="p", problem="beyond_end", policy="fail")._value.get() == 2  # p[0], p[1]
    assert store.meta("offset_reset:kafka:p:0")
    lc.close()

    lc2, fake2 = consumer(store, new_logs, clock, on_offset_reset="earliest")
    fake2.rebalance(set(new_logs))
    drain(lc2, clock, store, len(new_records))
    assert {(t, p): n for t in TOPICS.values() for p, n in store.positions(f"kafka:{t}").items()} == {
        (tp.topic, tp.partition): len(v) for tp, v in new_logs.items()}
    assert lc2.ready()[0] and not store.meta("offset_reset:kafka:p:0")
    assert lc2.sig.offset_resets.labels(topic="p", problem="beyond_end", policy="earliest")._value.get() == 2
    counted = sum(v for (n, _), v in store.counters().items() if n in ("events", "dead_letters"))
    assert counted == len(old.records) + len(new_records)
    both = tmp_path / "both.jsonl"
    both.write_bytes(b"".join(p + b"\n" for _, _, p in old.records + new_records))
    assert_same_state(documents(store.url), replayed(tmp_path, Events(both, old.records + new_records)))


def test_an_end_offset_that_lags_records_already_read_is_not_a_reset(tmp_path: Path) -> None:
    """tansu's ListOffsets can answer less than what was already read (the last batch's base offset): the record
    before the stored position is fetched to confirm, so nothing is reset and nothing is read twice."""
    events = make_events(tmp_path, days=0.5, per_day=1500)
    store = Store(f"sqlite:///{tmp_path / 'live.db'}")
    store.migrate()
    clock = Clock()
    logs = partitioned(events.records)
    lc, fake = consumer(store, logs, clock)
    fake.rebalance(set(logs))
    for _ in range(3):
        lc.step()
    lc.close()
    lc, fake = consumer(store, logs, clock)
    fake.end_offsets = lambda tps, timeout_ms=None: {tp: max(0, fake.pos.get(tp, 0) - 7) for tp in tps}
    fake.pos = {tp: n for t in TOPICS.values() for p, n in store.positions(f"kafka:{t}").items()
                for tp in [TP(t, p)]}
    fake.rebalance(set(logs))
    drain(lc, clock, store, len(events.records))
    assert total(store) == len(events.records)
    counted = sum(v for (n, _), v in store.counters().items() if n in ("events", "dead_letters"))
    assert counted == len(events.records)
    counted = [x for x in lc.sig.offset_resets.collect()[0].samples if x.name.endswith("_total")]
    assert counted and all(x.value == 0 for x in counted), counted  # exported at 0 from the start, none counted


def test_retention_before_the_stored_position_resumes_at_the_log_start(tmp_path: Path) -> None:
    events = make_events(tmp_path, days=0.5, per_day=1500)
    store = Store(f"sqlite:///{tmp_path / 'live.db'}")
    store.migrate()
    clock = Clock()
    logs = partitioned(events.records)
    lc, fake = consumer(store, logs, clock)
    fake.rebalance({tp for tp in logs if tp.partition == 0})
    while 0 not in store.positions("kafka:p"):
        lc.step()
    lc.close()
    stored = store.positions("kafka:p")[0]
    assert stored + 10 < len(logs[TP("p", 0)])
    lc, fake = consumer(store, logs, clock)
    fake.starts = {TP("p", 0): stored + 10}  # retention deleted ten records never read
    fake.rebalance(set(logs))
    drain(lc, clock, store, len(events.records) - 10)
    assert store.positions("kafka:p")[0] == len(logs[TP("p", 0)])
    assert lc.sig.offset_resets.labels(topic="p", problem="before_start", policy="earliest")._value.get() == 1


def test_keys_other_than_the_prediction_id_are_dead_lettered_or_counted(tmp_path: Path) -> None:
    events = make_events(tmp_path, days=0.3, per_day=1500)
    records = list(events.records)
    bad = [i for i, r in enumerate(records) if r[0] == "outcomes"][:6]
    for n, i in enumerate(bad):
        kind, key, payload = records[i]
        records[i] = (kind, (b"other-key", None, b"")[n % 3], payload)  # an empty key is a key: key_mismatch
    logs = partitioned(events.records)  # partitioned by the right keys; the records carry the wrong ones
    index = {payload: key for _, key, payload in records}
    logs = {tp: [(index[v], v) for _, v in log] for tp, log in logs.items()}
    store = Store(f"sqlite:///{tmp_path / 'dl.db'}")
    store.migrate()
    clock = Clock()
    lc, fake = consumer(store, logs, clock)
    fake.rebalance(set(logs))
    drain(lc, clock, store, len(records))
    counters = store.counters()
    assert counters[("dead_letters", "key_mismatch")] == 4 and counters[("dead_letters", "key_missing")] == 2
    details = [d["detail"] for d in store.dead_letters(reason="key_mismatch")]
    assert sum("other-key" in d for d in details) == 2 and all("is not the prediction_id" in d for d in details)
    assert sum(d.startswith("key '' is not") for d in details) == 2
    assert all("has no key" in d["detail"] for d in store.dead_letters(reason="key_missing"))

    store2 = Store(f"sqlite:///{tmp_path / 'accept.db'}")
    store2.migrate()
    lc, fake = consumer(store2, logs, clock, on_key_mismatch="accept")
    fake.rebalance(set(logs))
    drain(lc, clock, store2, len(records))
    assert ("dead_letters", "key_mismatch") not in store2.counters()
    assert lc.sig.key_mismatches.labels(topic="o", problem="key_mismatch", action="accepted")._value.get() == 4
    assert lc.sig.key_mismatches.labels(topic="o", problem="key_missing", action="accepted")._value.get() == 2


def test_lag_of_unowned_partitions_and_readiness_without_partitions(tmp_path: Path) -> None:
    """A process that owns nothing still exports the lag of every partition (stored positions vs log ends) and
    turns not-ready once it has owned nothing for longer than kafka.unassigned_grace."""
    events = make_events(tmp_path, days=0.3, per_day=1500)
    store = Store(f"sqlite:///{tmp_path / 'live.db'}")
    store.migrate()
    clock = Clock()
    logs = partitioned(events.records)
    lc, fake = consumer(store, logs, clock, unassigned_grace="10s")
    lc.step()
    assert lc.ready()[0]  # within the grace period after start
    clock.t += 11
    lc.step()
    ok, why = lc.ready()
    assert not ok and why.startswith("no partition assigned for 1")
    series = {s.labels["partition"] + s.labels["topic"]: s.value
              for m in lc.ops.registry.collect() if m.name == "driftline_consumer_lag_messages" for s in m.samples}
    assert series == {f"{tp.partition}{tp.topic}": float(len(v)) for tp, v in logs.items()}
    fake.rebalance(set(logs))
    lc.step()
    assert lc.ready()[0]


def test_readiness_names_the_lag_of_the_partitions_owned_only(tmp_path: Path) -> None:
    """Real-broker tryout (two `run` members, 1-partition topics): the member left with 0 partitions by a rebalance
    answered /readyz `kafka ok: 0 partitions assigned, lag 2836` for seconds while the other had stored everything
    (lag 0): the sum was over every partition, from its database sample of up to 5 s before. /readyz names the lag of
    the partitions owned; the series still cover every partition (a stalled group shows its lag)."""
    events = make_events(tmp_path, days=0.3, per_day=1500)
    store = Store(f"sqlite:///{tmp_path / 'live.db'}")
    store.migrate()
    clock = Clock()
    logs = partitioned(events.records)

    def series() -> dict[TP, float]:
        return {TP(s.labels["topic"], int(s.labels["partition"])): s.value for m in lc.ops.registry.collect()
                if m.name == "driftline_consumer_lag_messages" for s in m.samples}

    lc, fake = consumer(store, logs, clock)
    lc.step()
    assert lc.ready() == (True, "kafka ok: 0 partitions assigned")  # was `…, lag 496`: none its own
    assert series() == {tp: float(len(v)) for tp, v in logs.items()}
    mine = {tp for tp in logs if tp.partition == 0}
    fake.rebalance(mine)
    for _ in range(3):
        lc.step()
        clock.t += 1.1
    ok, why = lc.ready()
    lag = series()
    assert ok and why.endswith(f", lag {sum(lag[tp] for tp in mine):.0f}") and why.startswith("kafka ok: 2 partitions")
    assert set(lag) == set(logs) and sum(lag[tp] for tp in mine) < sum(len(logs[tp]) for tp in mine)
    fake.rebalance(set())
    lc.step()
    assert lc.ready() == (True, "kafka ok: 0 partitions assigned (p 0, o 0)")  # was `…, lag N`, N its own last lag
    stored = {tp: store.positions(source_of(tp.topic)).get(tp.partition, 0) for tp in logs}
    assert series() == {tp: float(len(v) - stored[tp]) for tp, v in logs.items()}  # the partitions handed over:
    # read from the database at once, not this member's sample from before it owned them (up to 5 s old)
