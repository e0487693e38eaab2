"""Reading the database id at start while the database flaps (SRE tryout: PostgreSQL up 1 s / down 3 s right after the
start-up migration logged `database unavailable while reading its id (…); retrying in 0s`, `1s`, `2s`, one warning per
attempt, and no line when it ended; the retries backed off to 5 s). Now the outage is one line at its start, one at
its end, the waits at most 2 s, and the backoff shared with the consumer is reset."""

from __future__ import annotations

import logging
from typing import Any

from driftline.kafka import group_db
from driftline.kafka.group_db import wait_for_database_id
from driftline.kafka.health import Backoff
from driftline.storage.errors import StoreUnavailable

from test_start_retry import _Waits  # a stop event advancing a fake clock by each wait


def test_an_outage_while_reading_the_database_id_is_logged_at_its_start_and_end(caplog: Any, monkeypatch: Any
                                                                                 ) -> None:
    caplog.set_level(logging.INFO, logger="driftline")
    downs = [8]

    def database_id(store: Any) -> str:
        if downs[0]:
            downs[0] -= 1
            raise StoreUnavailable("connection failed: Connection refused")
        return "abc"

    monkeypatch.setattr(group_db, "database_id", database_id)
    monkeypatch.setattr(group_db, "group_since", lambda store, group, sources: 1.0)
    stop, backoff = _Waits(), Backoff(0.5, 5.0)
    assert wait_for_database_id(object(), stop, backoff, "g") == ("abc", 1.0)  # type: ignore[arg-type]
    warned = [r.getMessage() for r in caplog.records if r.name == "driftline.kafka.group_db"
              and r.levelno >= logging.WARNING]
    assert len(warned) == 2 and "Connection refused" in warned[0] and "succeeded again" in warned[1], warned
    assert len(stop.waits) == 8 and max(stop.waits) <= 2.0, stop.waits
    assert backoff.attempts == 0
