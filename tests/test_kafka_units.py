"""Kafka path without a broker: settings and secret redaction, topic checks, the store's position guard
(the fence against zombie consumers), the rebalance hand-off, fault plans, pacing and backoff."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from driftline.config import Config, ConfigError, Kafka, from_dict
from driftline.kafka.health import Backoff, describe_error
from driftline.kafka.faults import Faults, parse
from driftline.kafka.handoff import Handoff
from driftline.kafka.producer import Pacer
from driftline.kafka.settings import SecretFilter, env_options, redacted, resolve
from driftline.kafka.topics import TopicsError, copartition_problem, create
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.storage.store import StalePositions, Store


def test_bootstrap_precedence_flag_then_env_then_config() -> None:
    section = Kafka(bootstrap="cfg:9092")
    assert resolve(section, "flag:1", {"DRIFTLINE_KAFKA_BOOTSTRAP": "env:2"}).bootstrap == "flag:1"
    assert resolve(section, None, {"DRIFTLINE_KAFKA_BOOTSTRAP": "env:2"}).bootstrap == "env:2"
    assert resolve(section, None, {}).bootstrap == "cfg:9092"
    with pytest.raises(ConfigError, match="DRIFTLINE_KAFKA_BOOTSTRAP"):
        resolve(Kafka(), None, {})


def _options(options: dict[str, Any]) -> Kafka:
    """The kafka section with these options, as a config file loads it (ConfigError when the load refuses them)."""
    return from_dict({"kafka": {"options": options}}).kafka


def test_forced_unknown_and_clashing_settings_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="kafka.options.enable_auto_commit`: cannot be set"):
        _options({"enable_auto_commit": True})
    with pytest.raises(ConfigError, match="DRIFTLINE_KAFKA_OPT_PARTITION_ASSIGNMENT_STRATEGY: cannot be set"):
        resolve(Kafka(), "b:1", {"DRIFTLINE_KAFKA_OPT_PARTITION_ASSIGNMENT_STRATEGY": "x"})
    with pytest.raises(ConfigError, match="kafka.options.sesion_timeout_ms`: unknown kafka-python setting"):
        _options({"sesion_timeout_ms": 1})
    with pytest.raises(ConfigError, match="DRIFTLINE_KAFKA_OPT_SESION_TIMEOUT_MS: unknown kafka-python setting"):
        resolve(Kafka(), "b:1", {"DRIFTLINE_KAFKA_OPT_SESION_TIMEOUT_MS": "1"})
    with pytest.raises(ConfigError, match="field `kafka.outcomes_topic`: 'x' is the predictions_topic too; the two "
                       "topics must differ"):  # at load, as every kafka check: it was found by `run` only
        from_dict({"kafka": {"predictions_topic": "x", "outcomes_topic": "x"}})


def test_each_client_gets_only_its_options_and_the_consumer_commits_manually_with_range() -> None:
    from kafka.coordinator.assignors.range import RangePartitionAssignor

    s = resolve(Kafka(group_id="grp", client_id="me", options={
        "session_timeout_ms": 6000, "linger_ms": 20, "security_protocol": "SASL_SSL"}), "a:1,b:2", {})
    c, p, a = s.consumer_kwargs(), s.producer_kwargs(), s.admin_kwargs()
    assert c["bootstrap_servers"] == p["bootstrap_servers"] == a["bootstrap_servers"] == ["a:1", "b:2"]
    assert c["enable_auto_commit"] is False and c["partition_assignment_strategy"] == [RangePartitionAssignor]
    assert c["group_id"] == "grp" and c["client_id"] == "me" and c["session_timeout_ms"] == 6000
    assert "session_timeout_ms" not in p and "session_timeout_ms" not in a
    assert p["linger_ms"] == 20 and "linger_ms" not in c
    assert c["security_protocol"] == p["security_protocol"] == a["security_protocol"] == "SASL_SSL"


def test_aborted_transactions_are_not_read_by_default_but_the_position_probe_sees_open_ones(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The consumer reads committed records only (overridable); the probe that confirms a stored position beyond
    the reported log end reads uncommitted ones: under read_committed the end offset is the last stable offset, and
    a position stored inside a transaction still open is not a log reset."""
    import kafka

    from driftline.kafka.resets import records_exist

    assert resolve(Kafka(), "a:1", {}).consumer_kwargs()["isolation_level"] == "read_committed"
    assert resolve(Kafka(options={"isolation_level": "read_uncommitted"}), "a:1", {}
                   ).consumer_kwargs()["isolation_level"] == "read_uncommitted"
    with pytest.raises(ConfigError, match=r"kafka.options.isolation_level`: 'read-committed' is neither"):
        _options({"isolation_level": "read-committed"})
    with pytest.raises(ConfigError, match="DRIFTLINE_KAFKA_OPT_ISOLATION_LEVEL: 'committed' is neither"):
        resolve(Kafka(), "a:1", {"DRIFTLINE_KAFKA_OPT_ISOLATION_LEVEL": "committed"})
    for bad in ("abc", 0, -5, True, 1.5, None):  # was "unexpected ValueError" (exit 1) for "abc"
        with pytest.raises(ConfigError, match=r"kafka.options.max_poll_interval_ms`: .* not a positive whole number"):
            _options({"max_poll_interval_ms": bad})
    with pytest.raises(ConfigError, match=r"DRIFTLINE_KAFKA_OPT_SESSION_TIMEOUT_MS: 'soon' is not a positive"):
        resolve(Kafka(), "a:1", {"DRIFTLINE_KAFKA_OPT_SESSION_TIMEOUT_MS": "soon"})
    built: list[dict[str, Any]] = []

    class Probe:
        DEFAULT_CONFIG = kafka.KafkaConsumer.DEFAULT_CONFIG

        def __init__(self, **kwargs: Any) -> None:
            built.append(kwargs)

        def assign(self, tps: Any) -> None: ...
        def seek(self, tp: Any, offset: int) -> None: ...
        def poll(self, timeout_ms: int) -> dict[Any, Any]:
            return {}

        def close(self, autocommit: bool) -> None: ...

    monkeypatch.setattr(kafka, "KafkaConsumer", Probe)
    assert records_exist(resolve(Kafka(), "a:1", {}), {kafka.TopicPartition("p", 0): 5}, timeout_s=0.0) == set()
    assert built[0]["isolation_level"] == "read_uncommitted" and built[0]["group_id"] is None


def test_secrets_never_reach_log_lines(caplog: pytest.LogCaptureFixture) -> None:
    env = {"DRIFTLINE_KAFKA_OPT_SASL_PLAIN_PASSWORD": "12345-hunter2", "DRIFTLINE_KAFKA_OPT_SASL_MECHANISM": "PLAIN",
           "DRIFTLINE_KAFKA_OPT_REQUEST_TIMEOUT_MS": "40000"}
    assert env_options(env) == {"sasl_plain_password": "12345-hunter2", "sasl_mechanism": "PLAIN",
                                "request_timeout_ms": 40000}
    s = resolve(Kafka(options={"sasl_plain_username": "svc", "ssl_password": "pem-pass"}), "b:1", env)
    line = s.describe()
    assert "12345-hunter2" not in line and "pem-pass" not in line
    assert "sasl_plain_password=***" in line and "sasl_plain_username=svc" in line
    assert redacted({"sasl_oauth_token_provider": object(), "x": 1})["sasl_oauth_token_provider"] == "***"
    record = logging.LogRecord("kafka.conn", logging.ERROR, __file__, 1, "auth failed for %s with %s", ("svc",
                               "12345-hunter2"), None)
    assert SecretFilter(s.secrets()).filter(record)
    assert record.getMessage() == "auth failed for svc with ***"


def test_copartition_problems_name_the_topics_and_counts() -> None:
    assert copartition_problem({"p": 6, "o": 6}) is None
    msg = copartition_problem({"p": 2, "o": 3})
    assert msg is not None and "not co-partitioned" in msg and "p has 2 partitions" in msg and "o has 3" in msg
    msg = copartition_problem({"p": None, "o": 3})
    assert msg is not None and "p do not exist" in msg


def test_missing_topics_name_the_broker_in_the_command_to_run() -> None:
    """Verify tryout: a client rebuilt after a broker reset said `driftline topics create --kafka HOST:PORT …` on
    /readyz and in the log, where the running client's reason names the bootstrap it consumes from."""
    from driftline.kafka.topics import check

    settings = resolve(Kafka(predictions_topic="p", outcomes_topic="o"), "127.0.0.1:19392", {})
    with pytest.raises(TopicsError) as err:
        check(FakeAdmin({"o": 3}), settings)
    assert "(`driftline topics create --kafka 127.0.0.1:19392 --partitions N`)" in str(err.value)


class FakeAdmin:
    """describe_topics/create_topics of KafkaAdminClient over a dict."""

    def __init__(self, topics: dict[str, int]) -> None:
        self.topics = dict(topics)
        self.created: list[dict[str, Any]] = []

    def describe_topics(self, names: list[str]) -> list[dict[str, Any]]:
        return [{"name": n, "error_code": 0, "partitions": list(range(self.topics[n]))} if n in self.topics
                else {"name": n, "error_code": 3, "partitions": []} for n in names]

    def create_topics(self, spec: dict[str, dict[str, int]], wait_for_metadata: bool = False) -> None:
        self.created.append(spec)
        self.topics.update({n: v["num_partitions"] for n, v in spec.items()})


def test_topics_create_matches_an_existing_topic_and_never_changes_counts() -> None:
    s = resolve(Kafka(dead_letter_topic="dead"), "b:1", {})
    admin = FakeAdmin({"predictions": 4})
    assert create(admin, s, None) == (4, ["outcomes", "dead"])
    assert admin.topics == {"predictions": 4, "outcomes": 4, "dead": 4}
    with pytest.raises(TopicsError, match="have 4 partitions, not 2"):
        create(FakeAdmin({"predictions": 4}), s, 2)
    with pytest.raises(TopicsError, match="not co-partitioned"):
        create(FakeAdmin({"predictions": 4, "outcomes": 2}), s, None)
    fresh = FakeAdmin({})
    assert create(fresh, s, None)[0] == 6 and fresh.topics["outcomes"] == 6


def _pred(i: int, score: float = 0.9) -> bytes:
    return json.dumps({"prediction_id": f"tx-{i}", "model": "fraud", "ts": 1_700_000_000 + i,
                       "score": score}).encode()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    url = f"sqlite:///{tmp_path / 'g.db'}" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    s = Store(url, clock=lambda: 1_700_100_000.0)
    s.migrate()
    yield s
    s.close()


def test_position_guard_fences_a_stale_batch_and_writes_nothing(store: Store) -> None:
    """A batch read from an offset that is no longer the stored one (another consumer moved it) is rejected
    whole: no counts, no position change. Guarded batches from the stored offset move it; replay is unguarded."""
    pipe = Pipeline(Config(), store, clock=lambda: 1_700_100_000.0)
    src = "kafka:predictions"
    batch = [RawRecord(src, 0, i, _pred(i), "prediction") for i in range(3)]
    pipe.process_batch(batch, None, {(src, 0): 0})
    assert store.positions(src) == {0: 3}
    with pytest.raises(StalePositions) as err:
        pipe.process_batch([RawRecord(src, 0, 3, _pred(3), "prediction"),
                            RawRecord(src, 1, 0, _pred(100), "prediction")], None, {(src, 0): 0, (src, 1): 0})
    assert err.value.stale == {(src, 0): (0, 3)}
    assert store.positions(src) == {0: 3}
    assert store.counters()[("events", "prediction")] == 3
    pipe.process_batch([RawRecord(src, 0, 3, _pred(3), "prediction")], None, {(src, 0): 3})
    with pytest.raises(StalePositions):  # a missing row counts as 0, so a batch claiming 5 is stale
        pipe.process_batch([RawRecord(src, 2, 5, _pred(200), "prediction")], None, {(src, 2): 5})
    pipe.process_batch([RawRecord("file:x", 0, 9, _pred(300))])
    assert store.positions(src) == {0: 4} and store.positions("file:x") == {0: 10}
    assert store.counters()[("events", "prediction")] == 5


def test_handoff_pauses_new_partitions_and_reports_revoked_first() -> None:
    from kafka import TopicPartition as TP

    paused: list[TP] = []
    events: list[tuple[str, int]] = []
    h = Handoff(lambda *tps: paused.extend(tps), lambda kind, tps: events.append((kind, len(tps))))
    h.on_partitions_revoked(set())
    h.on_partitions_assigned({TP("p", 0), TP("o", 0)})
    assert set(paused) == {TP("p", 0), TP("o", 0)}
    assert h.take() == ({TP("p", 0), TP("o", 0)}, set())
    h.on_partitions_revoked({TP("p", 0), TP("o", 0)})
    h.on_partitions_assigned({TP("p", 0), TP("o", 0), TP("p", 1), TP("o", 1)})
    assigned, dropped = h.take()
    assert dropped == {TP("p", 0), TP("o", 0)} and len(assigned) == 4
    h.on_partitions_assigned({TP("p", 1)})
    h.on_partitions_lost({TP("p", 1)})
    assert h.take() == (set(), {TP("p", 1)})
    assert h.take() == (set(), set())
    assert events == [("assign", 2), ("revoke", 2), ("assign", 4), ("assign", 1), ("revoke", 1)]


def test_fault_plan_kills_at_the_nth_hit_only() -> None:
    assert parse("after_store_commit:3, revoke:1") == {"after_store_commit": 3, "revoke": 1}
    assert parse(None) == {} and parse("mid_batch") == {"mid_batch": 1}
    with pytest.raises(ValueError, match="unknown fault point"):
        parse("somewhere:1")
    killed: list[int] = []
    f = Faults({"after_store_commit": 3}, kill=lambda: killed.append(1))
    for _ in range(5):
        f.hit("after_store_commit")
        f.hit("revoke")
    assert killed == [1] and f.hits == {"after_store_commit": 5}
    assert not Faults.from_env({}).active


def test_pacer_holds_the_rate_in_wall_time() -> None:
    now = [100.0]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s

    p = Pacer(50.0, clock=lambda: now[0], sleep=sleep)
    for _ in range(101):
        p.wait()
    assert now[0] - 100.0 == pytest.approx(2.0)
    with pytest.raises(ValueError):
        Pacer(0)


def test_reachability_is_not_read_from_heartbeats_paused_by_a_rebalance() -> None:
    """kafka-python pauses heartbeats while rebalancing: a rebalance held up by another member was reported as
    'Kafka unreachable' once the last heartbeat was 12-20 s old, although the coordinator was known."""
    from driftline.kafka.health import broker_connected, membership_problem

    class Consumer:
        config = {"session_timeout_ms": 6000}

        def __init__(self, coordinator: int | None, state: str, heartbeat_ago: float) -> None:
            self._coordinator = type("C", (), {"coordinator_id": coordinator, "state": state})()
            self.ago = heartbeat_ago

        def metrics(self) -> dict[str, Any]:
            return {"consumer-coordinator-metrics": {"last-heartbeat-seconds-ago": self.ago}}

    assert broker_connected(Consumer(1, "<rebalancing>", 100.0))
    assert membership_problem(Consumer(1, "<rebalancing>", 100.0)) == "group membership <rebalancing>"
    assert not broker_connected(Consumer(1, "<stable>", 100.0))  # a stable member's heartbeats stopped
    assert broker_connected(Consumer(1, "<stable>", 3.0))
    assert not broker_connected(Consumer(None, "<rebalancing>", 1.0))  # the coordinator is forgotten
    assert membership_problem(Consumer(None, "<rebalancing>", 1.0)) == "group coordinator unknown"
    # just after a 56-s rebalance the last heartbeat is still the one before it (~3 s until the next)
    assert broker_connected(Consumer(1, "<stable>", 56.0), rebalanced_s_ago=1.0)
    assert membership_problem(Consumer(1, "<stable>", 56.0), rebalanced_s_ago=1.0) is None
    assert not broker_connected(Consumer(1, "<stable>", 56.0), rebalanced_s_ago=30.0)


def test_backoff_doubles_to_its_cap_and_resets() -> None:
    b = Backoff(0.5, 5.0)
    assert [b.next() for _ in range(6)] == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0]
    b.reset()
    assert b.next() == 0.5


def test_error_descriptions_do_not_repeat_the_class_name() -> None:
    from kafka.errors import KafkaTimeoutError

    assert describe_error(KafkaTimeoutError("Unable to bootstrap")).count("KafkaTimeoutError") == 1
    assert describe_error(OSError("refused")) == "OSError: refused"


class _Rec:
    def __init__(self, offset: int) -> None:
        self.offset, self.value = offset, b"{}"


def test_batch_fill_gathers_polls_until_the_limit_and_stops_on_rebalance_or_silence() -> None:
    import threading

    from kafka import TopicPartition

    from driftline.kafka.batches import fill, fresh_records

    tp = TopicPartition("predictions", 0)
    feed = [{tp: [_Rec(i) for i in range(k, k + 10)]} for k in range(10, 100, 10)]
    asked: list[int] = []

    def poll(timeout_ms: int, max_records: int) -> dict:
        asked.append(max_records)
        return feed.pop(0) if feed else {}

    stop, clock = threading.Event(), (lambda: 0.0)  # a clock that never moves: silence or the limit must end it
    batch, rest = fill(poll, {tp: [_Rec(i) for i in range(10)]}, 35, 0.25, stop, lambda: False, clock)
    assert [r.offset for r in batch[tp]] == list(range(40)) and asked == [25, 15, 5] and rest == {}
    feed[:] = []
    assert len(fill(poll, {tp: [_Rec(0)]}, 100, 0.25, stop, lambda: False, clock)[0][tp]) == 1  # nothing more came
    feed[:] = [{tp: [_Rec(1)]}]
    assert len(fill(poll, {tp: [_Rec(0)]}, 100, 0.25, stop, lambda: True, clock)[0][tp]) == 1  # a rebalance is pending
    assert fill(poll, {}, 100, 0.25, stop, lambda: False, clock) == ({}, {})  # an empty first poll waits for nothing
    # only records from the expected offset on, of positioned partitions
    fresh = fresh_records({tp: [_Rec(i) for i in range(5, 9)], TopicPartition("outcomes", 0): [_Rec(0)]},
                          {tp: 7}, set())
    assert list(fresh) == [tp] and [r.offset for r in fresh[tp]] == [7, 8]


def test_batch_fill_lingers_from_when_the_first_records_were_polled() -> None:
    import threading

    from kafka import TopicPartition

    from driftline.kafka.batches import fill

    tp, now, asked = TopicPartition("predictions", 0), [10.0], []

    def poll(timeout_ms: int, max_records: int) -> dict:
        asked.append(timeout_ms)
        now[0] += 0.1
        return {tp: [_Rec(100 + len(asked))]}

    first, stop = {tp: [_Rec(i) for i in range(5)]}, threading.Event()
    # carried records polled 0.3 s ago have lingered past 0.25 s already: stored as they are, no poll
    assert fill(poll, first, 100, 0.25, stop, lambda: False, lambda: now[0], since=9.7) == (first, {}) and asked == []
    # polled 0.1 s ago: only the remaining 0.15 s of the linger
    assert len(fill(poll, first, 100, 0.25, stop, lambda: False, lambda: now[0], since=9.9)[0][tp]) == 7
    assert asked == [150, 50]
    asked.clear()
    assert len(fill(poll, first, 100, 0.25, stop, lambda: False, lambda: now[0])[0][tp]) == 8  # from now: 0.25 s
    assert asked == [250, 150, 50]


class _Future:
    def __init__(self, error: BaseException | None) -> None:
        self.is_done, self.exception = True, error

    def succeeded(self) -> bool:
        return self.exception is None


class _Producer:
    """A producer whose every send succeeds, or fails as kafka-python's did after a broker reset."""

    def __init__(self, error: BaseException | None) -> None:
        self.error, self.sent, self.closed = error, [], False

    def send(self, topic: str, value: bytes, headers: list) -> _Future:
        self.sent.append(value)
        return _Future(self.error)

    def flush(self, timeout: float) -> None:
        pass

    def close(self, timeout: float) -> None:
        self.closed = True


def test_a_dead_letter_producer_that_delivers_nothing_is_replaced_before_the_next_send() -> None:
    """SRE tryout: after a broker reset kafka-python's idempotent producer failed every send for minutes
    (OutOfOrderSequenceNumber, then InitProducerId errors) while a new one sent at once; a producer that could not
    be opened at start was never tried again. Both are opened afresh now; the database copy stays the truth."""
    from kafka.errors import KafkaConnectionError, OutOfOrderSequenceNumberError

    from driftline.core.events import DeadLetter
    from driftline.kafka.dlt import DeadLetterSink
    from driftline.kafka.signals import signals
    from driftline.ops import OpsMetrics

    made: list[Any] = [KafkaConnectionError(), _Producer(OutOfOrderSequenceNumberError()), _Producer(None)]

    def open_producer() -> Any:
        item = made.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item

    sig = signals(OpsMetrics())
    sink = DeadLetterSink(open_producer, "dlt", 1024, sig)
    letter = DeadLetter("invalid_json", "bad", "kafka:p", 0, 7, b"{not json")
    failed = sig.dlt_failed.labels
    assert sink.send([letter], {}) == [False] and sink.opened == 0  # the broker is away: counted, kept
    assert failed(error="KafkaConnectionError")._value.get() == 1
    broken = made[0]
    assert sink.send([letter], {}) == [False] and sink.opened == 1  # the reset producer: nothing arrives
    assert failed(error="OutOfOrderSequenceNumberError")._value.get() == 1 and broken.closed
    assert sink.send([letter], {}) == [True] and sink.opened == 2  # a new producer sends it
    assert sink.send([letter, letter], {}) == [True, True] and sink.opened == 2  # and is kept while it works
    assert sig.dlt_sent._value.get() == 3 and not made
    sink.close()


def test_an_option_of_the_wrong_kind_is_refused_naming_where_it_came_from() -> None:
    """Tryout: DRIFTLINE_KAFKA_OPT_REQUEST_TIMEOUT_MS=abc (and `check_crcs: 7`, `security_protocol: 5`) passed and
    `run` started, to fail inside kafka-python; an unknown option from the environment was named by its lower-case
    setting, not the variable the user set."""
    with pytest.raises(ConfigError, match=r"^DRIFTLINE_KAFKA_OPT_REQUEST_TIMEOUT_MS: 'abc' is not a number, as "
                                          r"kafka-python's request_timeout_ms is \(default 30000\)$"):
        resolve(Kafka(), "a:1", {"DRIFTLINE_KAFKA_OPT_REQUEST_TIMEOUT_MS": "abc"})
    with pytest.raises(ConfigError, match=r"`kafka.options.check_crcs`: 7 is not true or false"):
        _options({"check_crcs": 7})
    with pytest.raises(ConfigError, match=r"`kafka.options.security_protocol`: 5 is not text"):
        _options({"security_protocol": 5})
    with pytest.raises(ConfigError, match=r"^DRIFTLINE_KAFKA_OPT_NONSENSE: unknown kafka-python setting$"):
        resolve(Kafka(), "a:1", {"DRIFTLINE_KAFKA_OPT_NONSENSE": "1"})
    ok = resolve(Kafka(options={"request_timeout_ms": 40000, "check_crcs": False}), "a:1",
                 {"DRIFTLINE_KAFKA_OPT_SASL_PLAIN_PASSWORD": "12345"})
    assert ok.consumer_kwargs()["request_timeout_ms"] == 40000


def test_a_dead_letter_topic_that_refuses_every_copy_logs_one_line_per_streak_not_one_per_letter(
        caplog: pytest.LogCaptureFixture) -> None:
    """SRE tryout: a dead-letter topic the broker refuses (tansu with a schema on it: InvalidRecordError; likewise a
    missing write ACL) logged one warning per dead letter, and again for each at every re-send from the database
    (316 letters: 948 lines in 80 s). Now the first failing send is one line naming the count, the error class and
    the first letter, later ones only every 300 s with the count, and one line when copies arrive again."""
    from kafka.errors import InvalidRecordError

    from driftline.core.events import DeadLetter
    from driftline.kafka.dlt import DeadLetterSink
    from driftline.kafka.signals import signals
    from driftline.ops import OpsMetrics
    from driftline.streak import FailureStreak

    now = [0.0]
    made: list[Any] = [_Producer(InvalidRecordError()) for _ in range(3)] + [_Producer(None)]
    sig = signals(OpsMetrics())
    streak = FailureStreak("dead-letter topic dlt: sending copies", logging.getLogger("driftline.kafka.dlt"),
                           monotonic=lambda: now[0])
    sink = DeadLetterSink(lambda: made.pop(0), "dlt", 1024, sig, streak=streak)
    letters = [DeadLetter("invalid_json", "bad", "kafka:p", 0, i, b"{not json") for i in range(50)]
    with caplog.at_level(logging.WARNING, logger="driftline.kafka.dlt"):
        assert sink.send(letters, {}) == [False] * 50
        now[0] += 30.0  # the re-send from the database
        assert sink.send(letters, {}) == [False] * 50
        lines = [r.getMessage() for r in caplog.records]
        assert len(lines) == 1, lines
        assert lines[0].startswith("dead-letter topic dlt: sending copies failed: 50 of 50 copies not sent "
                                   "(InvalidRecordError ×50; the first, of kafka:p[0]@0 (invalid_json): ")
        now[0] += 300.0
        assert sink.send(letters[:2], {}) == [False, False]
        assert len(caplog.records) == 2 and "3 attempts in 330s" in caplog.records[1].getMessage()
        assert sink.send(letters[:2], {}) == [True, True]
        assert len(caplog.records) == 3 and "succeeded again" in caplog.records[2].getMessage()
    assert sig.dlt_failed.labels(error="InvalidRecordError")._value.get() == 102
    sink.close()
