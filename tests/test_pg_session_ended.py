"""PostgreSQL ends the consumer's session mid-batch (`pg_terminate_backend`, on-call tryout): each terminated session
logged two warnings, "database unavailable (… terminating connection due to administrator command) …; retrying in
0.5s" then "database reachable again after 1s (a write committed)", and /readyz answered 503 until the retry, while
the retry on a new connection stored the batch at once. Now a session ended under a call is one warning saying so and
what is done (retried at once on a new connection), readiness stays; only a retry that fails too is an outage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from driftline.storage.pgread import quiet_pipeline_exit_echo
from driftline.storage.store import Store
from test_kafka_db_lock import _lines, _live, _steps
from test_kafka_loop import total

pytestmark = pytest.mark.postgres


def _terminating(monkeypatch: Any, admin: Store, kill_on: set[int]) -> list[int]:
    """Store.load_join (a batch's join lookup, inside its write transaction) whose session the server ends first on
    the calls numbered in `kill_on` (1-based); returns the list of calls made."""
    real = Store.load_join
    calls: list[int] = []

    def killed(self: Store, conn: Any, ids: Any) -> Any:
        calls.append(len(calls) + 1)
        if calls[-1] in kill_on:
            pid = conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
            with admin.engine.connect() as other:
                other.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid})
        return real(self, conn, ids)

    monkeypatch.setattr(Store, "load_join", killed)
    return calls


def test_a_session_ended_by_the_server_is_one_warning_and_no_outage(pg_url: str, tmp_path: Path, caplog: Any,
                                                                     monkeypatch: Any) -> None:
    caplog.set_level("INFO", logger="driftline")
    quiet_pipeline_exit_echo()  # as the CLI does at start (cli._main)
    events, store, clock, logs, lc, fake = _live(pg_url, tmp_path, days=0.3)
    admin = Store(pg_url)
    try:
        calls = _terminating(monkeypatch, admin, kill_on={1, 3})  # two sessions ended, each retry stores
        fake.rebalance(set(logs))
        for _ in range(40):
            _steps(lc, clock, 1)
            assert lc.ready()[0], lc.ready()[1]  # never 503: the database was writable all along
        assert len(calls) >= 4
        assert total(store) == len(events.records)
        ended = _lines(caplog, "database session ended by the server")
        assert len(ended) == 2, ended
        assert all("retrying at once on a new connection" in m for m in ended), ended
        assert not _lines(caplog, "database unavailable") and not _lines(caplog, "again after")
        echoes = [r.getMessage() for r in caplog.records if r.name.startswith("psycopg") and r.levelno >= 30]
        assert not echoes, echoes  # psycopg's "error ignored terminating <Pipeline>": the same event again
    finally:
        admin.close()


def test_a_retry_that_fails_too_is_an_outage_from_the_first_loss(pg_url: str, tmp_path: Path, caplog: Any,
                                                                  monkeypatch: Any) -> None:
    """The session ended and the retry's session ended too: not ready, 'database unavailable' (backoff), then
    'reachable again' once a write commits; one 'session ended' line, not one per retry."""
    caplog.set_level("INFO", logger="driftline")
    events, store, clock, logs, lc, fake = _live(pg_url, tmp_path, days=0.3)
    admin = Store(pg_url)
    try:
        _terminating(monkeypatch, admin, kill_on={1, 2, 3})
        fake.rebalance(set(logs))
        seen_not_ready = []
        for _ in range(40):
            _steps(lc, clock, 1)
            ok, why = lc.ready()
            if not ok:
                seen_not_ready.append(why)
        assert total(store) == len(events.records)
        assert seen_not_ready and all("database unavailable" in w for w in seen_not_ready), seen_not_ready
        assert len(_lines(caplog, "database session ended by the server")) == 1
        assert len(_lines(caplog, "database unavailable")) == 2  # the failed retry, then its own retry
        assert len(_lines(caplog, "database reachable again")) == 1
        assert lc.ready()[0]
    finally:
        admin.close()


def test_a_leader_lock_session_ended_by_the_server_is_taken_again_with_one_warning(pg_url: str, caplog: Any) -> None:
    """The same for a leader lock's own session (on-call tryout: `leader lock check failed: … terminating
    connection …` then `… succeeded again`, and driftline_leader 0 until the next check took the lock again)."""
    from driftline.service.leader import LeaderLock

    caplog.set_level("INFO", logger="driftline")
    store, admin = Store(pg_url), Store(pg_url)
    lock = LeaderLock(store)
    try:
        assert lock.held()
        with admin.engine.connect() as other:
            holders = other.execute(text("SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted "
                                         "AND database = (SELECT oid FROM pg_database WHERE datname = "
                                         "current_database())")).scalars().all()
            assert len(holders) == 1
            other.execute(text("SELECT pg_terminate_backend(:p)"), {"p": holders[0]})
        assert lock.held()  # taken again at once, on a new session
        lines = [r.getMessage() for r in caplog.records if r.levelno >= 30]
        assert len(lines) == 1 and "ended by the server" in lines[0] and "taken again" in lines[0], lines
        assert lock.held() and len([r for r in caplog.records if r.levelno >= 30]) == 1
    finally:
        lock.release()
        store.close()
        admin.close()


def test_the_readiness_probe_reads_again_on_a_new_session_when_the_server_ended_its_own() -> None:
    """The exporter's probe (what /readyz and driftline_database_up report) met a session ended under its SELECT:
    it read 'database unreachable: … terminating connection …' (503) until the next probe 2 s later."""
    from contextlib import contextmanager

    from driftline.exporter.dbstate import DatabaseProbe
    from driftline.storage.errors import SessionLost

    class Conn:
        def execute(self, *_: Any) -> None:
            return None

    class EndedOnce:
        def __init__(self) -> None:
            self.reads = 0

        @contextmanager
        def read(self) -> Any:
            self.reads += 1
            if self.reads == 1:
                raise SessionLost("(psycopg.errors.AdminShutdown) terminating connection due to administrator command")
            yield Conn()

    store = EndedOnce()
    assert DatabaseProbe(store).probe() == (True, "database ok")  # type: ignore[arg-type]
    assert store.reads == 2
