"""The connect retries of a client rebuilt while the broker lacks its topics, logged once per gap.

Tryout: `run` consuming; the broker killed, down past kafka.stall_restart (the client rebuilt), then restarted
empty. The rebuilt client's connect found the topics missing and logged `ERROR … do not exist …; retrying in 10s`
at every attempt, six lines a minute until they were created, where a reset seen by the running client logs one
(topic_watch.py). Now the gap is one ERROR line, a reminder every 5 min with the count, and one line at its end;
a gap the running client's topic watch logged before the rebuild goes on with reminders only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from ..streak import REPEAT_EVERY_S
from .health import ConsumerStatus
from .topics import TopicsError

RETRY_EVERY_S = 10.0
"""How often a rebuilt client checks again for topics it found missing or unusable."""


class Stop(Protocol):
    """The stop event (threading.Event): set when the process stops; wait() returns early then."""

    def is_set(self) -> bool: ...

    def wait(self, timeout: float | None = None) -> bool: ...


def connect_once_topics_exist(connect: Callable[[], bool], stop: Stop, status: ConsumerStatus,
                              logger: logging.Logger, monotonic: Callable[[], float],
                              retry_every_s: float = RETRY_EVERY_S, remind_every_s: float = REPEAT_EVERY_S,
                              logged_since: float | None = None,
                              reason: Callable[[TopicsError], str] = str) -> None:
    """Call `connect` until it works or `stop` is set, retrying every `retry_every_s` while it raises TopicsError;
    the problem is logged at ERROR when it starts or changes, then at most every `remind_every_s`, and its end once.
    `logged_since`: the gap's start was logged already at that time (this clock) by the running client's topic
    watch; it goes on with reminders only and its end is the caller's line (TopicWatch.reset). `reason`: the
    failure as /readyz names it (status.error)."""
    attempts, since, logged, last = 0, 0.0, 0.0, ""
    if logged_since is not None:
        since, logged = logged_since, monotonic()
    while not stop.is_set():
        try:
            connected = connect()
        except TopicsError as err:
            now, why = monotonic(), str(err)
            status.error = reason(err)
            attempts += 1
            if attempts == 1 and logged_since is None:
                since = now
            if (attempts == 1 and logged_since is None) or (attempts > 1 and why != last):
                logged = now
                logger.error("%s; retrying every %.0fs (logged again every %.0fs while it lasts)", why, retry_every_s,
                             remind_every_s)
            elif now - logged >= remind_every_s:
                logged = now
                logger.error("%s; still, %d attempts in %.0fs", why, attempts, now - since)
            last = why
            stop.wait(retry_every_s)
            continue
        if attempts and connected and logged_since is None:
            logger.warning("Kafka topics usable again after %d failed attempts in %.0fs: connected", attempts,
                           monotonic() - since)
        return
