"""Scheduled jobs (APScheduler 3.11 BackgroundScheduler, UTC): trigger evaluation, the weekly report (with a
catch-up on start), maintenance (implicit negatives and expiry past the label horizon) and bucket compaction.

Every job is idempotent: the weekly report is unique per model and ISO week (a report already stored is left
alone), maintenance works from the event-time watermark, compaction merges only what is not merged yet. Only the
holder of a leader lock runs jobs (PostgreSQL: a session advisory lock, pg_try_advisory_lock; SQLite: a flock on
a file next to the database), so several replicas never do the same work twice. Jobs of one JobScheduler run one
at a time.

Schedule: evaluation every `schedule.evaluate_every`; the weekly report on `schedule.weekly_report_cron`
(default Monday 06:00 UTC; coalesced, misfire grace 6 days) for the last complete ISO week before the clock,
plus once at start when that report is missing (a restart after a missed Monday still produces it exactly
once); maintenance hourly; compaction daily at 03:17 UTC.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from ..core.events import iso
from ..storage import ceilings
from ..storage.compaction import compact, compaction_cutoff
from ..storage.samples import compact_samples
from ..config import Config, ConfigError
from ..durations import parse_duration
from ..ingest.pipeline import Pipeline
from ..reports import table
from ..reports.generate import generate
from ..reports.weeks import has_data, week_of
from .apsched import Scheduler
from .leader import LeaderLock
from ..storage.store import Store

log = logging.getLogger(__name__)

JOBS_LOCK_KEY = 0x6472_6966_746C + 1
"""Advisory lock of the report/maintenance/compaction jobs (service.LOCK_KEY + 1: the Service's own trigger
evaluation holds service.LOCK_KEY, possibly on another replica)."""
MISFIRE_GRACE_S = 6 * 86400
"""A weekly report missed by up to 6 days (process down, machine asleep) still runs, once (coalesced)."""

DONE, EXISTS, SKIPPED, NOT_LEADER, FAILED = "done", "exists", "skipped", "not_leader", "failed"


@dataclass(frozen=True)
class JobOutcome:
    """What one job run did: its status (done, exists, skipped, not_leader, failed) and details."""

    job: str
    status: str
    detail: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"job": self.job, "status": self.status, **self.detail}


def cron_trigger(expr: str) -> CronTrigger:
    """CronTrigger in UTC from a 5-field crontab expression ('0 6 * * mon'); ConfigError naming the field."""
    try:
        return CronTrigger.from_crontab(expr, timezone=timezone.utc)
    except ValueError as err:
        raise ConfigError(f"schedule.weekly_report_cron: {err}") from None


class Jobs:
    """The job bodies, each safe to run any number of times, on any replica (the leader lock decides)."""

    def __init__(self, store: Store, config: Config, clock: Callable[[], float] = time.time, *,
                 leader: LeaderLock | None = None, lock_key: int = JOBS_LOCK_KEY, report_dir: str | None = None,
                 evaluate: Callable[[], Any] | None = None) -> None:

        self.store, self.config, self.clock = store, config, clock
        self.leader = leader if leader is not None else LeaderLock(store, lock_key)
        self.report_dir = report_dir or config.schedule.report_dir
        self._evaluate = evaluate
        self._lock = threading.Lock()
        self.history: list[JobOutcome] = []

    def _run(self, name: str, body: Callable[[], JobOutcome]) -> JobOutcome:
        with self._lock:
            if not self.leader.held():
                out = JobOutcome(name, NOT_LEADER)
            else:
                try:
                    out = body()
                except Exception as err:  # noqa: BLE001 - a failing job must not stop the scheduler
                    log.exception("scheduled job %s failed", name)
                    out = JobOutcome(name, FAILED, {"error": f"{type(err).__name__}: {err}"})
            self.history.append(out)
            if out.status not in (NOT_LEADER, EXISTS):
                log.info("job %s: %s %s", name, out.status, out.detail)
            return out

    # --- the jobs -------------------------------------------------------------------------------------------
    def weekly_report(self) -> JobOutcome:
        """Report of the configured model for the last complete ISO week before the clock, unless stored."""
        def body() -> JobOutcome:
            now = float(self.clock())
            week = week_of(now).previous()
            model = self.config.model
            info = {"model": model, "week": week.label}
            if table.exists(self.store, model, week.label):
                return JobOutcome("weekly_report", EXISTS, info)
            if not has_data(self.store, model, week):
                return JobOutcome("weekly_report", SKIPPED, {**info, "reason": "no predictions in the week"})
            res = generate(self.store, self.config, model, week, now, self.report_dir, replace=False,
                           source="scheduler", week_reason="scheduled: last complete ISO week")
            status = DONE if res.stored else EXISTS
            return JobOutcome("weekly_report", status, {**info, "paths": {k: str(v) for k, v in res.paths.items()}})
        return self._run("weekly_report", body)

    def maintain(self) -> JobOutcome:
        """Implicit negatives past maturity and expiry past the label horizon (Pipeline.maintain); `held_back_to`
        in the detail when a live consumer's ceiling holds the watermark below the newest event stored."""
        def body() -> JobOutcome:
            counts = Pipeline(self.config, self.store, clock=self.clock).maintain()
            detail: dict[str, Any] = {"counts": {f"{n}{':' + lbl if lbl else ''}": v
                                                 for (n, lbl), v in counts.items()}}
            held, newest = ceilings.shared(self.store, float(self.clock())), self.store.newest_event()
            if held is not None and newest is not None and held < newest:
                detail["held_back_to"] = iso(held) if math.isfinite(held) else "a partition not read yet"
            return JobOutcome("maintain", DONE, detail)
        return self._run("maintain", body)

    def compact(self) -> JobOutcome:
        """Merge buckets older than the label horizon (+1 day) into day buckets (see driftline.compaction), and
        their feature samples into day samples (storage.samples.compact_samples)."""
        def body() -> JobOutcome:
            cutoff = compaction_cutoff(self.store, self.config.labels.horizon_s)
            result = compact(self.store, cutoff).to_json()
            result["sample_days"] = compact_samples(self.store, cutoff, self.config.drift.sample_k)
            return JobOutcome("compact", DONE, result)
        return self._run("compact", body)

    def evaluate(self) -> JobOutcome:
        """One trigger evaluation pass (the callable given, e.g. Service.evaluate_once; else runner + notify)."""
        def body() -> JobOutcome:
            if self._evaluate is not None:
                self._evaluate()
                return JobOutcome("evaluate", DONE)
            from ..triggers.notify import Notifier, deliver
            from ..triggers import runner

            now = float(self.clock())
            run = runner.run(self.store, self.config, now, at=now)
            if run.states_later is not None:  # the clock went back: nothing was stored, nobody is told
                return JobOutcome("evaluate", SKIPPED, {"reason": "the stored trigger states are newer than now"})
            deliver(Notifier(self.config.notify, self.config.model, clock=self.clock), self.store, run)
            return JobOutcome("evaluate", DONE, {"transitions": len(run.transitions)})
        return self._run("evaluate", body)

    def close(self) -> None:
        """Give up the leader lock (another replica can take over)."""
        self.leader.release()


CATCH_UP_RETRY_S = 300.0
"""A failed start catch-up (database unavailable or a table locked at start) is tried again this much later."""


class JobScheduler:
    """The jobs on a BackgroundScheduler (its own, or one it was given, e.g. the Service's)."""

    def __init__(self, jobs: Jobs, scheduler: BackgroundScheduler, owns: bool) -> None:
        self.jobs, self.scheduler, self.owns = jobs, scheduler, owns
        self.catch_up_retry_s, self._catch_ups = CATCH_UP_RETRY_S, 0

    def start(self, catch_up: bool = True) -> None:
        """Queue the catch-up (the missing weekly report, right away, again while it fails) and start the
        scheduler if owned."""
        if catch_up:
            self._queue_catch_up(datetime.now(timezone.utc))
        if self.owns and not self.scheduler.running:
            self.scheduler.start()

    def _queue_catch_up(self, when: datetime) -> None:
        """The catch-up as a one-off job (a new id each time: a date job is removed once submitted)."""
        self._catch_ups += 1
        job_id = "weekly-report-catch-up" + ("" if self._catch_ups == 1 else f"-{self._catch_ups}")
        self.scheduler.add_job(self._catch_up, id=job_id, replace_existing=True, next_run_time=when,
                               misfire_grace_time=None)

    def _catch_up(self) -> JobOutcome:
        """The start's weekly report, tried again every catch_up_retry_s while it fails (verification tryout: one
        failed at a start behind `LOCK TABLE predictions` left last week without a report until a restart, the
        weekly cron reporting the week after)."""
        out = self.jobs.weekly_report()
        if out.status == FAILED and self.scheduler.running:
            log.warning("weekly report catch-up failed (%s); trying again in %gs", out.detail.get("error", "?"),
                        self.catch_up_retry_s)
            self._queue_catch_up(datetime.now(timezone.utc) + timedelta(seconds=self.catch_up_retry_s))
        return out

    def shutdown(self, wait: bool = True, release: bool = True) -> None:
        """Stop the owned scheduler (waiting for a running job) and release the leader lock (`release` False: the
        caller releases `lock` with its own, in one shared wait)."""
        if self.owns and self.scheduler.running:
            self.scheduler.shutdown(wait=wait)
        if release:
            self.jobs.close()

    @property
    def lock(self) -> LeaderLock:
        """The jobs' leader lock."""
        return self.jobs.leader


def build_scheduler(ctx_or_store: Any, config: Config, clock: Callable[[], float] = time.time, *,
                    scheduler: BackgroundScheduler | None = None, evaluate: bool | Callable[[], Any] = True,
                    report_dir: str | None = None, leader: LeaderLock | None = None,
                    lock_key: int = JOBS_LOCK_KEY, maintain: bool = True) -> JobScheduler:
    """Jobs added to `scheduler` (or a new UTC BackgroundScheduler): weekly report (cron, coalesced, 6-day
    misfire grace), maintenance (hourly), compaction (daily) and, unless evaluate=False, trigger evaluation
    every schedule.evaluate_every (a callable replaces the built-in pass). maintain=False leaves maintenance to
    the caller (`driftline run` maintains the partitions it owns). Call .start(), then .shutdown()."""
    store: Store = ctx_or_store.store() if hasattr(ctx_or_store, "store") and callable(ctx_or_store.store) \
        else ctx_or_store
    owns = scheduler is None
    sched = scheduler if scheduler is not None else Scheduler(timezone=timezone.utc)
    jobs = Jobs(store, config, clock, leader=leader, lock_key=lock_key, report_dir=report_dir,
                evaluate=evaluate if callable(evaluate) else None)
    common = {"max_instances": 1, "coalesce": True, "replace_existing": True}
    sched.add_job(jobs.weekly_report, cron_trigger(config.schedule.weekly_report_cron), id="weekly-report",
                  misfire_grace_time=MISFIRE_GRACE_S, **common)
    if maintain:
        sched.add_job(jobs.maintain, IntervalTrigger(hours=1, timezone=timezone.utc), id="maintenance",
                      misfire_grace_time=3600, **common)
    sched.add_job(jobs.compact, CronTrigger(hour=3, minute=17, timezone=timezone.utc), id="compaction",
                  misfire_grace_time=86400, **common)
    if evaluate:
        every = parse_duration(config.schedule.evaluate_every)
        sched.add_job(jobs.evaluate, IntervalTrigger(seconds=every, timezone=timezone.utc), id="evaluate",
                      misfire_grace_time=max(1, int(every)), next_run_time=datetime.now(timezone.utc), **common)
    return JobScheduler(jobs, sched, owns)
