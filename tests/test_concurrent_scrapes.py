"""Two scrapes at once (a Prometheus HA pair, or an on-call `curl /metrics` during Prometheus's scrape) both get
the metrics; only a scrape stuck past its bound makes the next fail at once.

On-call tryout: with `driftline run` answering a scrape in ~1.4 s, a `curl /metrics` 0.3 s into Prometheus's
scrape got 503 `scrape failed: an earlier scrape has been running for more than 8s` after 2 ms (or made
Prometheus's own scrape fail): Prometheus recorded up=0 three times in three minutes of a broker outage, and each
failed scrape restarted the 2-minute `for` of the pending DriftlineKafkaUnreachable, which never fired.
"""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from driftline.exporter.dbstate import BoundedCall, ScrapeTimeout
from driftline.exporter.http import ExporterServer
from driftline.storage.store import Store

from scrape_gate import Gate


class _SpyLock:
    """The scrape slot's lock, telling when a caller waits on it (no sleeps needed to order the two scrapes)."""

    def __init__(self) -> None:
        self.inner, self.waiting = threading.Lock(), threading.Event()

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if blocking:
            self.waiting.set()
        return self.inner.acquire(blocking, timeout)

    def release(self) -> None:
        self.inner.release()


def _get(url: str, out: dict[str, Any], key: str) -> None:
    try:
        with urllib.request.urlopen(url, timeout=60) as resp:
            out[key] = (resp.status, resp.read().decode())
    except urllib.error.HTTPError as err:
        out[key] = (err.code, err.read().decode())


def test_a_scrape_arriving_during_another_waits_for_it_and_answers_200(tmp_path) -> None:
    gate = Gate(30)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(gate)
    server = ExporterServer(registry, Store(f"sqlite:///{tmp_path / 'd.db'}"), port=0, scrape_timeout_s=30.0)
    spy = _SpyLock()
    server.bounded._busy = spy  # type: ignore[assignment]
    server.start()
    out: dict[str, Any] = {}
    try:
        url = server.url + "/metrics"
        first = threading.Thread(target=_get, args=(url, out, "first"))
        first.start()
        assert gate.entered.wait(30)
        second = threading.Thread(target=_get, args=(url, out, "second"))
        second.start()
        spy.waiting.wait(30)  # the second scrape waits for the first (before the fix it failed at once)
        gate.release.set()
        first.join(60)
        second.join(60)
    finally:
        gate.release.set()
        server.stop()
    assert out["first"][0] == 200 and "gate 1.0" in out["first"][1]
    assert out["second"][0] == 200, out["second"]
    assert "gate 1.0" in out["second"][1]


def test_a_scrape_stuck_past_its_bound_still_fails_the_next_at_once() -> None:
    release, waited = threading.Event(), threading.Event()
    bounded = BoundedCall(0.2)
    spy = _SpyLock()
    bounded._busy = spy  # type: ignore[assignment]
    try:
        with pytest.raises(ScrapeTimeout, match="did not finish within 0.2s"):
            bounded(lambda: release.wait(30))
        with pytest.raises(ScrapeTimeout, match=r"an earlier scrape has been running for \d+s \(more than 0.2s\)"):
            bounded(lambda: waited.set())
        assert not spy.waiting.is_set(), "a scrape stuck past its bound must not be waited for"
        assert not waited.is_set()
    finally:
        release.set()
