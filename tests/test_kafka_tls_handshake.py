"""A TLS handshake the peer never answers is an unreachable broker, not a hang (SRE tryout).

Reproduction: `kafka.options: {security_protocol: SSL}` against a listener that accepts the connection and never
answers the ClientHello (the tansu test broker's plaintext listener reads it as the start of a huge request; a load
balancer without a live backend does the same). kafka-python 3.0 bounds the TCP connect but not the handshake, so
`run` hung in KafkaAdminClient's bootstrap on its main thread: no log line, /readyz "kafka connecting" with no
reason, SIGTERM ignored (12 minutes until kill -9). Fixed in driftline/kafka/tls_handshake.py."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from kafka_service_support import start_service, wait_until
from tcp_forwarder import free_port

from driftline.kafka.settings import KafkaSettings
from driftline.kafka.topics import open_admin


@pytest.fixture
def silent_listener() -> Iterator[str]:
    """127.0.0.1:PORT of a listener that accepts connections and never sends a byte."""
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", free_port()))
    server.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=5)
        for conn in accepted:
            conn.close()
        server.close()


def test_an_admin_client_over_tls_to_a_silent_peer_fails_instead_of_hanging(silent_listener: str) -> None:
    """open_admin (run's first call, topic commands) raises a Kafka error once the handshake waited out its
    deadline; before the fix the call never returned."""
    from kafka.errors import KafkaError

    settings = KafkaSettings(bootstrap=silent_listener, options={"security_protocol": "SSL"})
    outcome: list[object] = []

    def call() -> None:
        try:
            open_admin(settings).close()
            outcome.append("connected")
        except Exception as err:  # noqa: BLE001 - recorded and checked below
            outcome.append(err)

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(timeout=90)  # a liveness bound (the handshake deadline is 10 s), not a speed assertion
    assert outcome, "open_admin still waiting for a TLS handshake the peer never answers"
    assert isinstance(outcome[0], KafkaError), outcome


@pytest.mark.kafka
def test_run_over_tls_to_a_plaintext_broker_reports_it_and_stops_on_sigterm(kafka_bootstrap: str,
                                                                             tmp_path: Path) -> None:
    """`run` with security_protocol SSL against the (plaintext) real broker: it logs the broker as unreachable,
    /readyz answers 503 with the reason, and SIGTERM stops it."""
    config = tmp_path / "driftline.yaml"
    config.write_text(yaml.safe_dump({"kafka": {"options": {"security_protocol": "SSL"}}}))
    svc = start_service(tmp_path, config, f"sqlite:///{tmp_path / 'live.db'}", kafka_bootstrap, name="tls")
    try:
        wait_until(lambda: "unreachable (attempt 1)" in svc.log(), 90, "the broker logged as unreachable",
                   procs=(svc,))
        status, body = svc.get("/readyz")
        assert status == 503 and "Unable to bootstrap" in body, (status, body)
        assert svc.terminate(timeout=60) == 0, svc.log()[-2000:]
    finally:
        svc.kill()
