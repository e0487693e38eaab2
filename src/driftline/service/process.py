"""The long-running service: Prometheus exporter + trigger evaluation (and other scheduled jobs) over the store.

`driftline serve` runs it over an existing database; `driftline run` (Kafka) runs it next to the consumer,
passing its OpsMetrics and readiness check. Jobs run on an APScheduler 3 BackgroundScheduler in UTC; only the
holder of a leader lock (PostgreSQL advisory lock, SQLite lock file) evaluates triggers, and only the holder of
another exports the series read from the database, so replicas neither notify twice nor count twice in dashboards
and rules.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from apscheduler.triggers.interval import IntervalTrigger
from sqlalchemy.exc import SQLAlchemyError

from ..config import Config
from ..durations import parse_duration
from ..exporter.collector import SnapshotCollector
from ..exporter.early import EarlyListener
from ..exporter.http import ExporterServer, Readiness, build_registry
from ..ops import OpsMetrics
from ..triggers.notify import Notifier, deliver
from ..storage.calls import DEFAULT_STALL_S
from ..storage.errors import StoreUnavailable
from ..storage.store import Store
from ..triggers import history, runner
from ..triggers.definition import shown_state
from ..triggers.drift_hook import DriftProvider, default_provider
from ..triggers.unseen import unseen_names
from ..readouts.windows import default_at, iso
from .apsched import Scheduler
from .leader import EXPORT_LOCK_KEY, LOCK_KEY, LeaderLock, release_all  # noqa: F401 - LOCK_KEY re-exported
from ..streak import FailureStreak

log = logging.getLogger(__name__)

class Service:
    """Owns the exporter HTTP server and the scheduler running trigger evaluation every evaluate_every."""

    def __init__(self, config: Config, store: Store, *, clock: Callable[[], float] = time.time,
                 ops: OpsMetrics | None = None, notifier: Notifier | None = None,
                 readiness: Readiness | None = None, host: str | None = None, port: int | None = None,
                 time_basis: str = "wall", drift: DriftProvider | None | str = "auto",
                 evaluate: bool = True, jobs: bool = False, jobs_maintain: bool = True,
                 stall_s: float = DEFAULT_STALL_S, write_failure: Callable[[], str | None] | None = None,
                 listening: EarlyListener | None = None) -> None:
        self.config, self.store, self.clock = config, store, clock
        self.listening = listening
        """`run`: the exporter's socket, bound and answering since the process started (exporter/early.py)."""
        self.write_failure = write_failure
        """`run`: why the consumer's writes fail (driftline_database_up 0 meanwhile), else None."""
        self.stall_s = stall_s
        """A database call unanswered this long makes /readyz 503 and logs a warning (storage.calls)."""
        self.jobs_enabled = jobs
        self.jobs_maintain = jobs_maintain
        self.jobs: Any = None
        self.rules = runner.compile_rules(config.triggers)
        self.ops = ops if ops is not None else OpsMetrics()
        self.drift: DriftProvider | None = default_provider() if drift == "auto" else drift  # type: ignore[assignment]
        self.time_basis = time_basis
        self.schema_ready = threading.Event()
        """Set by start_jobs(): until then (the schema is being migrated) nothing queries the database."""
        self.lock_failures = FailureStreak("leader lock check", logging.getLogger("driftline.service.leader"))
        """Shared by this process's locks: an outage is one streak in the log, not one per lock (leader.py)."""
        self.leader = LeaderLock(store, failures=self.lock_failures)
        self.exporter_lock = LeaderLock(store, EXPORT_LOCK_KEY, failures=self.lock_failures)
        """Held by the one replica that exports the database's series (replicas must not count twice)."""
        self.snapshot = SnapshotCollector(store, config, clock, time_basis=time_basis, drift=self.drift,
                                          schema_ready=self.schema_ready, leader=self.exporter_lock.held)
        self.registry = build_registry(self.snapshot, self.ops)
        self.host = host if host is not None else config.exporter.host
        self.port = port if port is not None else config.exporter.port
        self.readiness = readiness
        self.server: ExporterServer | None = None
        self.notifier = notifier
        self.evaluate_enabled = evaluate
        self.scheduler = Scheduler(timezone=timezone.utc)
        self.last_run: runner.EvaluationRun | None = None
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        """Base URL of the running exporter."""
        assert self.server is not None, "service not started"
        return self.server.url

    def start(self) -> None:
        """Bind the exporter, then schedule trigger evaluation (first run immediately) over a migrated store."""
        self.start_exporter()
        self.start_jobs()

    def start_exporter(self) -> None:
        """Bind and serve /metrics, /healthz, /readyz: before start_jobs() (schema still being migrated) scrapes
        hold only build_info and the process's own metrics, so nothing queries tables that may not exist yet."""
        self.server = ExporterServer(self.registry, self.store, self.host, self.port, self.readiness,
                                     triggers_json=self.triggers_json, stall_s=self.stall_s,
                                     scrape_timeout_s=parse_duration(self.config.exporter.scrape_timeout),
                                     write_failure=self.write_failure,
                                     migrating=lambda: not self.schema_ready.is_set(), listening=self.listening)
        if self.notifier is None:
            self.notifier = Notifier(self.config.notify, self.config.model, ops=self.ops,
                                     generator_url=self.server.url + "/triggers")
        self.server.start()

    def start_jobs(self) -> None:
        """The schema is migrated: let scrapes read the store and schedule trigger evaluation and the jobs (with
        the weekly-report catch-up)."""
        self.schema_ready.set()
        if self.server is not None:
            self.server.probe.recheck()  # /readyz: "being migrated" ends now, not at the next probe
        self.snapshot.invalidate()
        if self.evaluate_enabled and self.rules:
            try:
                for line in unseen_names(self.store, self.config, self.config.model, self.rules):
                    log.warning("%s", line)
            except (StoreUnavailable, SQLAlchemyError) as err:  # a check only: the database may be briefly unavailable at start
                log.warning("trigger names not checked against stored data: %s", err)
            every = parse_duration(self.config.schedule.evaluate_every)
            self.scheduler.add_job(self.evaluate_once, IntervalTrigger(seconds=every, timezone=timezone.utc),
                                   id="evaluate-triggers", max_instances=1, coalesce=True,
                                   misfire_grace_time=max(1, int(every)),
                                   next_run_time=datetime.now(timezone.utc))
        if self.jobs_enabled:
            from .scheduler import JOBS_LOCK_KEY, build_scheduler  # here: the scheduler module imports this one lazily

            self.jobs = build_scheduler(self.store, self.config, self.clock, scheduler=self.scheduler, evaluate=False,
                                        maintain=self.jobs_maintain,
                                        leader=LeaderLock(self.store, JOBS_LOCK_KEY, failures=self.lock_failures))
            self.jobs.start(catch_up=True)  # queues the weekly-report catch-up; started with the scheduler below
        self.scheduler.start()

    def stop(self) -> None:
        """Stop scheduling (waiting for a running job), close the exporter and release the leader lock."""
        if self.scheduler.running:
            self.scheduler.shutdown(wait=True)
        if self.jobs is not None:
            self.jobs.shutdown(release=False)  # its advisory lock is released with the others below
        if self.server is not None:
            self.server.stop()
        release_all([*([] if self.jobs is None else [self.jobs.lock]), self.leader, self.exporter_lock])

    def evaluate_once(self) -> runner.EvaluationRun | None:
        """One evaluation pass (leader only): store states and transitions, then notify; None when skipped."""
        with self._lock:
            if not self.leader.held():
                log.debug("not the leader: trigger evaluation skipped")
                return None
            now = float(self.clock())
            at: float | None = now
            if self.time_basis == "event":
                at = default_at(self.store, self.config.model, self.config.bucket_s) or now
            try:
                run = runner.run(self.store, self.config, now, at, drift=self.drift, rules=self.rules)
            except StoreUnavailable as err:
                log.warning("trigger evaluation skipped: database unavailable: %s", err)
                return None
            except Exception:  # noqa: BLE001 - a failing pass must not stop the scheduler
                log.exception("trigger evaluation failed")
                return None
            self.last_run = run
            self.snapshot.invalidate()
            if run.states_later is not None:  # the clock went back: nothing was stored, nobody is told
                log.warning("trigger states were evaluated at %s, after now (%s): not stored, not notified",
                            iso(run.states_later), iso(now))
                return run
            deliver(self.notifier, self.store, run)
            return run

    def triggers_json(self) -> dict[str, Any]:
        """Current trigger states (the notifications' generatorURL points here)."""
        if not self.schema_ready.is_set():
            return {"model": self.config.model, "triggers": [], "waiting": "the database schema is being migrated"}
        states = history.load_states(self.store, self.config.model)
        return {"model": self.config.model, "triggers": [
            {**r.to_json(), "state": shown_state(r, states[r.name]) if r.name in states else None}
            for r in self.rules]}

