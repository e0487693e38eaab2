"""The test infrastructure works against the real services: tansu (kafka-python 3), PostgreSQL, forwarder."""

from __future__ import annotations

import socket
import threading
import time

import pytest
from kafka import (
    ConsumerRebalanceListener,
    KafkaAdminClient,
    KafkaConsumer,
    KafkaProducer,
    OffsetAndMetadata,
    TopicPartition,
)
from kafka.coordinator.assignors.range import RangePartitionAssignor

from kafka_fixtures import (
    CONSUMER_TEST_CONFIG,
    REQUIRE_ENV,
    ServiceUnavailable,
    TansuBroker,
    create_topics,
    partition_counts,
    skip_or_fail,
    tansu_binary,
    unique_name,
)
from pg_fixtures import ForwardedPg, PgDatabase
from tcp_forwarder import TcpForwarder, free_port

# Apache Kafka's own murmur2 reference vectors (clients/.../utils/UtilsTest.java, testMurmur2), signed int32.
JAVA_MURMUR2 = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


def _java_partition(key: bytes, n_partitions: int) -> int:
    """Java DefaultPartitioner: toPositive(murmur2(key)) % numPartitions."""
    return (JAVA_MURMUR2[key] & 0x7FFFFFFF) % n_partitions


def _consumer(bootstrap: str, group: str, **extra: object) -> KafkaConsumer:
    return KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        partition_assignment_strategy=[RangePartitionAssignor],
        max_poll_interval_ms=20000,  # the rebalance timeout, as the service's tests set it (kafka-python: 300 s)
        **{**CONSUMER_TEST_CONFIG, **extra},
    )


def _drain(consumer: KafkaConsumer, want: int, timeout_s: float = 15.0) -> list:
    records: list = []
    deadline = time.monotonic() + timeout_s
    while len(records) < want and time.monotonic() < deadline:
        for batch in consumer.poll(timeout_ms=300).values():
            records.extend(batch)
    return records


# -- Kafka (session broker) ------------------------------------------------------------------------


def test_tansu_topics_keys_group_consume_and_commit(kafka_bootstrap: str) -> None:
    """Two 2-partition topics; Kafka's murmur2 vectors decide partitions; a group consumer reads all
    and its manual commits read back."""
    preds, outs, group = unique_name("predictions"), unique_name("outcomes"), unique_name("g")
    assert create_topics(kafka_bootstrap, [preds, outs], partitions=2) == {preds: 2, outs: 2}
    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    try:
        assert partition_counts(admin, [preds, outs]) == {preds: 2, outs: 2}
        assert {preds, outs} <= set(admin.list_topics())
    finally:
        admin.close()

    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap)
    placed: dict[tuple[str, bytes], int] = {}
    for key in JAVA_MURMUR2:
        for topic in (preds, outs):
            meta = producer.send(topic, key=key, value=b"v:" + key).get(timeout=10)
            placed[(topic, key)] = meta.partition
    producer.close()
    for key in JAVA_MURMUR2:
        assert placed[(preds, key)] == placed[(outs, key)] == _java_partition(key, 2), key

    consumer = _consumer(kafka_bootstrap, group)
    try:
        consumer.subscribe([preds, outs])
        records = _drain(consumer, want=2 * len(JAVA_MURMUR2))
        assert sorted((r.topic, r.key, r.value) for r in records) == sorted(
            (t, k, b"v:" + k) for t in (preds, outs) for k in JAVA_MURMUR2
        )
        assert all(r.partition == _java_partition(r.key, 2) for r in records)
        assert len(consumer.assignment()) == 4

        last: dict[TopicPartition, int] = {}
        for r in records:
            tp = TopicPartition(r.topic, r.partition)
            last[tp] = max(last.get(tp, -1), r.offset)
        # High-water mark from fetch responses (correct on tansu; see notes on end_offsets()).
        assert {tp: consumer.highwater(tp) for tp in last} == {tp: o + 1 for tp, o in last.items()}
        consumer.commit({tp: OffsetAndMetadata(o + 1, "", -1) for tp, o in last.items()})
        assert {tp: consumer.committed(tp) for tp in last} == {tp: o + 1 for tp, o in last.items()}
        tp0 = next(iter(last))
        assert consumer.committed(tp0, metadata=True).offset == last[tp0] + 1  # (tansu drops the metadata string)
    finally:
        consumer.close()

    # The group's committed offsets, read back without joining (admin OffsetFetch).
    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    try:
        stored = admin.list_group_offsets(group)[group]
    finally:
        admin.close()
    assert {tp: om.offset for tp, om in stored.items()} == {tp: o + 1 for tp, o in last.items()}


class _Recorder(ConsumerRebalanceListener):
    """Records (event, partitions, thread name); sync listener -> runs on kafka-python's IO thread."""

    def __init__(self) -> None:
        self.events: list[tuple[str, frozenset[TopicPartition], str]] = []

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.events.append(("revoked", frozenset(revoked), threading.current_thread().name))

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.events.append(("assigned", frozenset(assigned), threading.current_thread().name))


def _poll_until(consumer: KafkaConsumer, stop: threading.Event) -> None:
    """Poll `consumer` (its group membership and heartbeats) until `stop` is set."""
    while not stop.is_set():
        consumer.poll(timeout_ms=100)


def test_tansu_two_members_split_co_partitioned(kafka_bootstrap: str) -> None:
    """Two members, RangePartitionAssignor: each gets the same partition index of both topics;
    when one leaves, the other takes everything. Listener callbacks run on the kafka-io thread."""
    preds, outs, group = unique_name("p"), unique_name("o"), unique_name("g")
    create_topics(kafka_bootstrap, [preds, outs], partitions=2)
    listeners = {name: _Recorder() for name in "AB"}
    consumers = {name: _consumer(kafka_bootstrap, group, client_id=f"infra-{name}") for name in "AB"}
    try:
        for name, c in consumers.items():
            c.subscribe([preds, outs], listener=listeners[name])
        # each member polls in its own thread, as members do: polled in turn from one thread, a member's join
        # waited inside its poll for the other's, which could not poll meanwhile (a 4-worker test run spun the
        # whole 120 s with both assignments empty)
        both = threading.Event()
        pollers = [threading.Thread(target=_poll_until, args=(c, both), daemon=True) for c in consumers.values()]
        for t in pollers:
            t.start()
        deadline = time.monotonic() + 120  # a hang guard: group joins are slow on a loaded machine
        while time.monotonic() < deadline and [len(c.assignment()) for c in consumers.values()] != [2, 2]:
            time.sleep(0.05)
        both.set()
        for t in pollers:
            t.join(30)
        got = {name: c.assignment() for name, c in consumers.items()}
        assert [len(a) for a in got.values()] == [2, 2], got
        for a in got.values():
            (index,) = {tp.partition for tp in a}
            assert a == {TopicPartition(preds, index), TopicPartition(outs, index)}
        assert got["A"].isdisjoint(got["B"])
        assert {ev[2] for rec in listeners.values() for ev in rec.events} == {"kafka-io-infra-A", "kafka-io-infra-B"}

        consumers.pop("B").close()  # leaves the group: A is reassigned everything
        deadline = time.monotonic() + 60
        while len(consumers["A"].assignment()) != 4 and time.monotonic() < deadline:
            consumers["A"].poll(timeout_ms=200)
        assert len(consumers["A"].assignment()) == 4
        assert listeners["A"].events[-1][:2] == ("assigned", frozenset(consumers["A"].assignment()))
    finally:
        for c in consumers.values():
            c.close()


def test_tansu_behind_forwarder_survives_outage(kafka_behind_forwarder: TansuBroker) -> None:
    """Cutting the forwarder drops every client connection; after restart the consumer resumes and
    the producer delivers what it buffered meanwhile, with no loss or duplicate."""
    broker = kafka_behind_forwarder
    fwd = broker.forwarder
    assert fwd is not None and broker.bootstrap == fwd.address
    topic = unique_name("p")
    create_topics(broker.bootstrap, [topic], partitions=2)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, reconnect_backoff_max_ms=500)
    consumer = _consumer(broker.bootstrap, unique_name("g"), reconnect_backoff_max_ms=500)
    try:
        consumer.subscribe([topic])
        for i in range(10):
            producer.send(topic, key=b"k%d" % i, value=b"%d" % i)
        producer.flush(timeout=10)
        seen = [r.value for r in _drain(consumer, want=10)]
        assert fwd.live_connections() > 0

        fwd.stop()
        assert fwd.live_connections() == 0
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", fwd.port), timeout=1).close()
        futures = [producer.send(topic, key=b"k%d" % i, value=b"%d" % i) for i in range(10, 20)]
        assert consumer.poll(timeout_ms=1000) == {}  # poll does not raise while the broker is away
        assert not any(f.is_done for f in futures)

        fwd.start()
        producer.flush(timeout=20)
        assert all(f.succeeded() for f in futures)
        seen += [r.value for r in _drain(consumer, want=10)]
        assert sorted(seen, key=int) == [b"%d" % i for i in range(20)]
    finally:
        consumer.close()
        producer.close()


def test_missing_binary_is_reported_as_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    """CALF_TANSU_BIN pointing nowhere -> ServiceUnavailable (the fixture turns it into skip/fail)."""
    monkeypatch.setenv("CALF_TANSU_BIN", "/nonexistent/tansu")
    with pytest.raises(ServiceUnavailable, match="tansu broker binary not found"):
        tansu_binary()


def test_skip_or_fail_follows_require_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without DRIFTLINE_REQUIRE_SERVICES a missing service skips; with =1 it fails."""
    monkeypatch.delenv(REQUIRE_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="no broker"):
        skip_or_fail("no broker")
    monkeypatch.setenv(REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="no broker"):
        skip_or_fail("no broker")


# -- TCP forwarder (no external service) -----------------------------------------------------------


def _echo_server() -> tuple[socket.socket, int]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)

    def serve() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return

            def echo(c: socket.socket = conn) -> None:
                with c:
                    while data := c.recv(4096):
                        c.sendall(data)

            threading.Thread(target=echo, daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return srv, srv.getsockname()[1]


def test_forwarder_stop_drops_connections_and_restarts_on_same_port() -> None:
    srv, target = _echo_server()
    fwd = TcpForwarder("127.0.0.1", target, port=free_port()).start()
    port = fwd.port
    try:
        client = socket.create_connection(("127.0.0.1", port), timeout=5)
        client.sendall(b"hello")
        assert client.recv(16) == b"hello"
        fwd.stop()
        try:
            dropped = client.recv(16) == b""
        except ConnectionResetError:
            dropped = True
        assert dropped
        client.close()
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=1)

        fwd.start()
        assert fwd.port == port
        with socket.create_connection(("127.0.0.1", port), timeout=5) as again:
            again.sendall(b"x" * 200_000)
            received = b""
            while len(received) < 200_000:
                received += again.recv(65536)
            assert received == b"x" * 200_000
        assert fwd.accepted == 2
    finally:
        fwd.stop()
        srv.close()


# -- PostgreSQL ------------------------------------------------------------------------------------


def test_pg_url_is_a_fresh_database(pg_database: PgDatabase, pg_url: str) -> None:
    from sqlalchemy import create_engine, text

    assert pg_url.startswith("postgresql+psycopg://") and pg_url.endswith("/" + pg_database.name)
    engine = create_engine(pg_url)
    try:
        with engine.begin() as conn:
            assert conn.execute(text("SELECT current_database()")).scalar() == pg_database.name
            assert conn.execute(text("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")).scalar() == 0
            conn.execute(text("CREATE TABLE t (x int)"))
            conn.execute(text("INSERT INTO t VALUES (1), (2), (40)"))
        with engine.connect() as conn:
            assert conn.execute(text("SELECT sum(x) FROM t")).scalar() == 43
    finally:
        engine.dispose()


def test_pg_behind_forwarder_outage(pg_behind_forwarder: ForwardedPg) -> None:
    import psycopg

    fp = pg_behind_forwarder
    url = fp.url.replace("postgresql+psycopg://", "postgresql://")
    conn = psycopg.connect(url, autocommit=True, connect_timeout=3)
    assert conn.execute("SELECT current_database()").fetchone() == (fp.database.name,)
    fp.forwarder.stop()
    with pytest.raises(psycopg.OperationalError):
        conn.execute("SELECT 1")
    conn.close()
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(url, connect_timeout=2)
    fp.forwarder.start()
    with psycopg.connect(url, autocommit=True, connect_timeout=3) as again:
        assert again.execute("SELECT 1").fetchone() == (1,)
