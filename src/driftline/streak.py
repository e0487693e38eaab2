"""A check that keeps failing (the leader-lock check while the database is unreachable), logged by its streak.

SRE tryout: while the database of `serve`/`run` was unreachable, every scrape and evaluation logged `leader lock
check failed:` with the driver's whole multi-line text, every 2-4 s for the whole outage. Now the streak's first
failure is one warning with the error's first line, then at most one line every `every_s` with the count, and one
line when the check succeeds again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

REPEAT_EVERY_S = 300.0
"""How often a streak that goes on is logged again (with its count)."""


def first_line(err: BaseException) -> str:
    """The error's first line (a driver's message goes on with hints, the SQL and a link)."""
    lines = str(err).strip().splitlines()
    return lines[0] if lines else type(err).__name__


class FailureStreak:
    """Thread-safe record of consecutive failures of one check (shared by the locks of a process), logging its start,
    a reminder at most every `every_s` and its end."""

    def __init__(self, what: str, logger: logging.Logger, every_s: float = REPEAT_EVERY_S,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.what, self.log, self.every_s, self.monotonic = what, logger, every_s, monotonic
        self.attempts = 0
        """Failures since the last success (0: not failing)."""
        self._since = self._logged = 0.0
        self._lock = threading.Lock()
        self.last = ""
        """The latest failure's first line ("" while not failing)."""

    def failed(self, err: BaseException) -> None:
        """One more failure: logged when it starts a streak, or when the last line is `every_s` old."""
        now, why = self.monotonic(), first_line(err)
        with self._lock:
            self.attempts, self.last = self.attempts + 1, why
            if self.attempts == 1:
                self._since = self._logged = now
                self.log.warning("%s failed: %s (logged again every %.0fs while it keeps failing)", self.what, why,
                                 self.every_s)
            elif now - self._logged >= self.every_s:
                self._logged = now
                self.log.warning("%s still failing, %d attempts in %.0fs: %s", self.what, self.attempts,
                                 now - self._since, why)

    def succeeded(self) -> None:
        """The check worked: the end of a streak is logged once."""
        with self._lock:
            if self.attempts:
                self.log.warning("%s succeeded again after %d failed attempts in %.0fs", self.what, self.attempts,
                                 self.monotonic() - self._since)
                self.attempts, self.last = 0, ""

    def failing_for(self) -> float:
        """Seconds since the streak's first failure (0 while not failing): how long a check has kept failing."""
        with self._lock:
            return self.monotonic() - self._since if self.attempts else 0.0

    def resume(self, since: float) -> None:
        """Go on with a streak whose start the caller logged already (at `since`, this clock): only reminders follow
        (a Kafka outage logged by the consumer, continued by the connect retries of a rebuilt client)."""
        with self._lock:
            if not self.attempts:
                self.attempts, self._since, self._logged = 1, since, self.monotonic()

    def forget(self) -> None:
        """End the streak without a line: the caller logs its end."""
        with self._lock:
            self.attempts, self.last = 0, ""
