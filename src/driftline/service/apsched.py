"""The APScheduler 3 scheduler every driftline schedule runs on, quiet about one race of its own at shutdown."""

from __future__ import annotations

from typing import Any

from apscheduler.jobstores.base import JobLookupError
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.schedulers.base import STATE_STOPPED


class Scheduler(BackgroundScheduler):  # type: ignore[misc]
    """A BackgroundScheduler whose loop survives a stop during its first round: APScheduler 3.11 removes a finished
    one-off job (the weekly-report catch-up) after `shutdown()` has already marked it stopped, the lookup then
    searches the pending jobs only and raises in the scheduler thread (a traceback in the log of a replica told
    to stop while it started). A job not found once stopped is one already gone."""

    def remove_job(self, job_id: str, jobstore: Any = None) -> None:
        try:
            super().remove_job(job_id, jobstore)
        except JobLookupError:
            if self.state != STATE_STOPPED:
                raise
