"""`driftline run` started while PostgreSQL is unreachable (on-call tryout): the start-up migration backed off to 15 s,
so consuming resumed up to ~20 s after the database came back; one warning per attempt; /readyz then said "kafka
starting: <the outage's error>" while the jobs started, and "no partition assigned for 46s" counted from the
process's start, not from when it began consuming. Now the waits are bounded (START_RETRY_CAP_S), the outage is
logged when it starts and when it ends, the old error is gone once migrated and the unassigned grace starts with
consuming."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

from driftline.service import live
from driftline.service.live import START_RETRY_CAP_S, migrate_with_retry
from driftline.storage.errors import StoreUnavailable


class _Flaky:
    """A store whose migrate() is refused `downs` times, then succeeds."""

    def __init__(self, downs: int) -> None:
        self.downs = downs

    def migrate(self) -> None:
        if self.downs:
            self.downs -= 1
            raise StoreUnavailable("connection failed: Connection refused")


class _Waits(threading.Event):
    """A stop event that records each wait and advances a fake clock by it instead of sleeping."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[float] = []
        self.now = 0.0

    def wait(self, timeout: float | None = None) -> bool:
        self.waits.append(float(timeout or 0.0))
        self.now += float(timeout or 0.0)
        return self.is_set()


def test_start_up_retries_are_bounded_and_the_outage_is_logged_at_its_start_and_end(caplog: Any) -> None:
    caplog.set_level(logging.INFO, logger="driftline")
    stop = _Waits()
    assert migrate_with_retry(_Flaky(30), stop, monotonic=lambda: stop.now)  # type: ignore[arg-type]
    assert len(stop.waits) == 30 and max(stop.waits) <= START_RETRY_CAP_S <= 2.0, stop.waits
    lines = [r.getMessage() for r in caplog.records if r.name == "driftline.service.live"]
    assert len([m for m in lines if "database unavailable while migrating" in m]) == 1, lines
    assert len([m for m in lines if "still unavailable" in m]) == 0, lines  # under 300 s in all
    again = [m for m in lines if "database reachable again" in m]
    assert len(again) == 1 and "30 attempts" in again[0], lines


def test_readiness_forgets_the_outage_once_migrated_and_the_unassigned_grace_starts_with_consuming(
        monkeypatch: Any, tmp_path: Path) -> None:
    from driftline.config import from_dict
    from driftline.kafka.consumer import LiveConsumer
    from driftline.kafka.settings import KafkaSettings
    from driftline.service.process import Service

    seen: dict[str, Any] = {}

    def migrated_after_an_outage(store: Any, stop: Any, on_wait: Any, on_first: Any) -> bool:
        on_wait("connection failed: Connection refused (the outage)")
        seen["migrated_at"] = time.monotonic()
        return True

    def start_jobs(self: Service) -> None:
        seen["ready_at_jobs"] = self.readiness() if self.readiness is not None else None

    def run(self: LiveConsumer) -> None:
        seen["unowned_since"] = self.unowned_since
        seen["ready_at_run"] = self.ready()

    monkeypatch.setattr(live, "migrate_with_retry", migrated_after_an_outage)
    monkeypatch.setattr(Service, "start_jobs", start_jobs)
    monkeypatch.setattr(LiveConsumer, "connect", lambda self: False)  # no broker: run() ends at once
    real_run = LiveConsumer.run

    def recorded_run(self: LiveConsumer) -> None:
        real_run(self)
        run(self)

    monkeypatch.setattr(LiveConsumer, "run", recorded_run)
    settings = KafkaSettings(bootstrap="127.0.0.1:9")
    live.run_service(from_dict({}), f"sqlite:///{tmp_path / 'x.db'}", settings, threading.Event(), port=0)
    ok, why = seen["ready_at_jobs"]
    assert not ok and "the outage" not in why, why
    assert seen["unowned_since"] is not None and seen["unowned_since"] >= seen["migrated_at"]


class _Locked:
    """A store whose migrate() waits out its lock timeout behind another session `downs` times, then succeeds."""

    def __init__(self, downs: int) -> None:
        self.downs = downs

    def migrate(self) -> None:
        from driftline.storage.errors import WriteLocked

        if self.downs:
            self.downs -= 1
            raise WriteLocked("another driftline writer held the database write lock for more than 10s")


def test_a_start_behind_a_held_write_lock_is_one_warning_though_the_holders_ages_grow(
        caplog: Any, monkeypatch: Any) -> None:
    """SRE tryout: `run` on a database whose write lock a session held idle in transaction logged the start-up
    warning at every attempt (each ~8 s), because the holder's description ('idle in transaction since … (9s)',
    '(16s)', …) made every attempt's error new; the same holder is one outage, logged once."""
    from datetime import datetime, timedelta, timezone

    from driftline.storage.lock_holder import LockHolder

    caplog.set_level(logging.INFO, logger="driftline")
    stop = _Waits()
    since = datetime(2026, 1, 1, 12, 0, 0, tzinfo=timezone.utc)

    def holder(store: Any) -> LockHolder:
        now = since + timedelta(seconds=10 + stop.now)
        return LockHolder(4242, "etl", "10.0.0.7:5123", "idle in transaction", since, since, now)

    monkeypatch.setattr(live, "write_lock_holder", holder)
    assert migrate_with_retry(_Locked(6), stop, monotonic=lambda: stop.now)  # type: ignore[arg-type]
    lines = [r.getMessage() for r in caplog.records if r.name == "driftline.service.live"
             and r.levelno >= logging.WARNING]
    unavailable = [m for m in lines if "database unavailable while migrating" in m]
    assert len(unavailable) == 1 and "pid 4242 " in unavailable[0], lines
