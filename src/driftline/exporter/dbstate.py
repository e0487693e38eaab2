"""What /readyz and /metrics know about the database without waiting for it.

/readyz used to run `SELECT 1` and /metrics to read the database in the request thread: a connection whose peer
stopped answering without a reset blocked both for minutes (SRE tryout). Now a background probe publishes whether
the database answered; /readyz reads that and the calls in flight (storage.calls), naming a call stalled for longer
than `stall_s`; a scrape runs in a worker thread and gives up after `scrape_timeout_s` (one at a time: a scrape
still stuck past its bound makes the next fail at once instead of piling threads up, while one merely running is
waited for, within the waiting scrape's own bound).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import TypeVar

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ..storage.calls import DbCalls
from ..storage.errors import SessionLost
from ..storage.store import Store

T = TypeVar("T")


MIGRATING = ("database schema being migrated by this process (a first start against an empty database, or an "
             "upgrade): not ready until the migration commits")
"""/readyz's reason while the process itself migrates (on-call tryout: a first start answered "schema missing …
restart driftline to migrate it" for ~2 s, telling the on-call to restart a process that was doing just that)."""


class DatabaseProbe:
    """A daemon thread running a trivial read every `every_s` (at once after recheck()) and publishing (ok, reason).

    `migrating` says whether the process is still migrating the schema (`run` and `serve` before their jobs start):
    a missing schema found meanwhile is the migration not committed yet, not a database recreated empty."""

    def __init__(self, store: Store, every_s: float = 2.0, monotonic: Callable[[], float] = time.monotonic,
                 migrating: Callable[[], bool] | None = None) -> None:
        self.store, self.every_s, self.monotonic = store, every_s, monotonic
        self.migrating = migrating
        self.result: tuple[bool, str] | None = None
        self.since: float | None = None
        """When the probe in flight started (None between probes): a trivial read unanswered for long is a stall."""
        self.checked = threading.Event()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._run, name="driftline-db-probe", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()  # a probe blocked in the driver is a daemon thread: not joined for long
        self._wake.set()

    def recheck(self) -> None:
        """Probe again now rather than after `every_s` (the migration committed: /readyz need not wait 2 s)."""
        self._wake.set()

    def probe(self) -> tuple[bool, str]:
        """(True, 'database ok') when a trivial read succeeds, else (False, the error's first line); a schema
        missing while this process migrates it is MIGRATING (asked before the read: a migration that commits
        during it was still running when the read found nothing)."""
        migrating = self.migrating is not None and self.migrating()
        try:
            try:
                self._read()
            except SessionLost:  # the server ended the session under the probe (pg_terminate_backend): a new one
                self._read()  # tells whether the database answers (it flapped /readyz to 503 until the next probe)
            return True, "database ok"
        except Exception as err:  # noqa: BLE001 - any driver error means not ready
            first = str(err).splitlines()[0]
            missing = first.startswith("database schema missing") or "alembic_version" in first
            if missing and migrating:
                return False, MIGRATING
            if first.startswith("database schema missing"):  # the store said so (storage/store.py)
                return False, first
            if "alembic_version" in first:  # SRE tryout: a database dropped and recreated empty read "schema ready"
                return False, f"database schema missing (recreated empty? restart driftline to migrate it): {first}"
            return False, f"database unreachable: {first}"

    def _read(self) -> None:
        """The probe's read: the schema too, not only the server."""
        from sqlalchemy import text

        with self.store.read() as conn:
            conn.execute(text("SELECT 1 FROM alembic_version"))

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.clear()
            self.since = self.monotonic()
            self.result = self.probe()
            self.since = None
            self.checked.set()
            self._wake.wait(self.every_s)


PROBE_STALL_S = 10.0
"""A `SELECT 1` unanswered this long (or stall_s when shorter) is reported before any other call reaches stall_s."""


def database_state(probe: DatabaseProbe, calls: DbCalls, stall_s: float, first_wait_s: float = 3.0
                   ) -> tuple[bool, str]:
    """(ready, reason) from published state only: a stalled call first, then the probe's last answer."""
    stalled = calls.stalled(stall_s)
    if stalled is not None:
        return False, f"database not answering: {calls.describe(stalled)}"
    since = probe.since
    if since is not None and probe.monotonic() - since > min(stall_s, PROBE_STALL_S):
        return False, f"database not answering: the readiness probe (SELECT 1) has been waiting " \
                      f"{probe.monotonic() - since:.0f}s"
    probe.checked.wait(first_wait_s)  # right after start: the first probe (bounded, it may be stalled itself)
    if probe.result is None:
        return False, "database not checked yet: the first probe has not answered"
    return probe.result


FIRST_CHECK_WAIT_S = 0.5
"""A scrape right after start waits this long for the first check (well within the shortest scrape bound, 1 s),
so it does not report 0 for a database that is fine."""


class DatabaseUp(Collector):
    """driftline_database_up in every scrape, on leader and standby alike (SRE tryout: with the database refusing
    connections /metrics stayed 200 while every model series vanished, and nothing said why)."""

    def __init__(self, probe: DatabaseProbe, calls: DbCalls, stall_s: float,
                 write_failure: Callable[[], str | None] | None = None) -> None:
        self.probe, self.calls, self.stall_s = probe, calls, stall_s
        self.write_failure = write_failure
        """`run`'s consumer: why its writes fail while reads may still work (disk full, read-only), else None."""

    def collect(self) -> Iterable[GaugeMetricFamily]:
        ok, _ = database_state(self.probe, self.calls, self.stall_s, first_wait_s=FIRST_CHECK_WAIT_S)
        if ok and self.write_failure is not None and self.write_failure() is not None:
            ok = False
        yield GaugeMetricFamily("driftline_database_up", "1 when this process's last database check (a read of the "
                                "schema every 2 s, what /readyz reports) succeeded; 0 when it failed, a call is "
                                "stalled, the first check has not answered yet, or (run) the last write failed "
                                "(disk full, read-only).", value=1.0 if ok else 0.0)


class ScrapeTimeout(Exception):
    """A scrape did not finish within its time limit (or an earlier one is still running)."""


class BoundedCall:
    """Runs one function at a time in a worker thread and waits at most `timeout_s` for it.

    A call arriving while another runs waits for it within its own bound (on-call tryout: a `curl /metrics` during
    Prometheus's scrape, or the second Prometheus of an HA pair, got 503 "an earlier scrape has been running for
    more than 8s" after 2 ms, so Prometheus recorded up=0 and restarted the `for` of pending alerts); only a call
    already running longer than the bound (stuck: its own caller gave up) makes the next fail at once."""

    def __init__(self, timeout_s: float, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.timeout_s, self.monotonic = timeout_s, monotonic
        self._busy = threading.Lock()
        self._started: float | None = None
        """When the running call started (None: none runs)."""

    def _acquire(self, arrived: float) -> None:
        """Take the one-at-a-time slot: at once, after waiting for a running call, or ScrapeTimeout."""
        if self._busy.acquire(blocking=False):
            return
        started = self._started
        if started is not None and arrived - started >= self.timeout_s:
            raise ScrapeTimeout(f"an earlier scrape has been running for {arrived - started:.0f}s "
                                f"(more than {self.timeout_s:g}s)")
        if not self._busy.acquire(timeout=max(0.0, self.timeout_s - (self.monotonic() - arrived))):
            raise ScrapeTimeout(f"scrape did not finish within {self.timeout_s:g}s (waiting for an earlier scrape "
                                "still running)")

    def __call__(self, fn: Callable[[], T]) -> T:
        arrived = self.monotonic()
        self._acquire(arrived)
        self._started = self.monotonic()
        remaining = max(0.0, self.timeout_s - (self._started - arrived))
        box: dict[str, object] = {}

        def work() -> None:
            try:
                box["value"] = fn()
            except BaseException as err:  # noqa: BLE001 - handed to the caller
                box["error"] = err
            finally:
                self._started = None
                self._busy.release()

        worker = threading.Thread(target=work, name="driftline-scrape", daemon=True)
        worker.start()
        worker.join(remaining)
        if worker.is_alive():
            raise ScrapeTimeout(f"scrape did not finish within {self.timeout_s:g}s")
        if "error" in box:
            raise box["error"]  # type: ignore[misc]
        return box["value"]  # type: ignore[return-value]
