"""The session holding driftline's write lock is named on PostgreSQL (on-call tryout: a second writer stuck idle in
transaction held the lock; /readyz and the log said writes were waiting for "another writer" but not which session,
so the on-call had to dig through pg_locks before `pg_terminate_backend`). Now: pid, application_name, client
address, state and since when, and the statement that ends it."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from driftline.storage.lock_holder import holder_of, write_lock_holder
from driftline.storage.locking import WRITE_LOCK_KEY
from driftline.storage.store import Store
from test_kafka_db_lock import _lines, _live, _steps
from test_kafka_loop import total


@pytest.mark.postgres
def test_a_write_lock_held_idle_in_transaction_names_its_session(pg_url: str, tmp_path: Path, caplog: Any) -> None:
    import psycopg

    caplog.set_level("INFO", logger="driftline")
    events, store, clock, logs, lc, fake = _live(pg_url, tmp_path, days=0.3)
    lc.lock_patience_s = 3.0
    stuck = psycopg.connect(pg_url.replace("postgresql+psycopg", "postgresql"), application_name="stuck-writer")
    try:
        stuck.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK_KEY,))  # then idle in transaction
        pid = stuck.info.backend_pid
        fake.rebalance(set(logs))
        _steps(lc, clock, 12)
        ok, why = lc.ready()
        assert not ok and total(store) == 0
        for part in (f"PostgreSQL session pid {pid} ", "application_name 'stuck-writer'", "client 127.0.0.1:",
                     "idle in transaction since ", f"SELECT pg_terminate_backend({pid})"):
            assert part in why, (part, why)
        warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"
                  and "write lock is held by another writer" in r.getMessage()]
        assert warned and f"pid {pid} " in warned[0] and "stuck-writer" in warned[0], warned
    finally:
        stuck.rollback()
        stuck.close()
    _steps(lc, clock, 40)
    assert total(store) == len(events.records) and lc.ready()[0]
    assert len(_lines(caplog, "database writable again")) == 1


@pytest.mark.postgres
def test_a_driftline_writer_holding_the_lock_is_named_driftline(pg_url: str) -> None:
    """driftline's own sessions carry application_name 'driftline' (unless the URL sets one): a second `run`, a
    replay or a compaction holding the lock is told from any other client."""
    writer, other = Store(pg_url), Store(pg_url)
    try:
        with writer.write() as conn:
            holder = write_lock_holder(other)
            assert holder is not None and holder.application_name == "driftline", holder
            assert holder.pid == conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
        assert write_lock_holder(other) is None
        named = Store(pg_url + "?application_name=etl")
        with named.write():
            assert (write_lock_holder(other) or holder).application_name == "etl"
        named.close()
    finally:
        writer.close()
        other.close()


@pytest.mark.postgres
def test_a_start_waiting_for_the_lock_names_its_holder(pg_url: str) -> None:
    """`run`/`serve` migrating at start behind a held write lock: /readyz's "kafka waiting for the database: …" and
    the warning name the session too."""
    import threading

    import psycopg

    from driftline.service.live import migrate_with_retry

    class StopAfterOne(threading.Event):
        def wait(self, timeout: float | None = None) -> bool:
            self.set()
            return True

    Store(pg_url).migrate()  # an upgrade is what waits for the lock: the schema one revision behind
    with Store(pg_url).write() as conn:
        conn.exec_driver_sql("DELETE FROM alembic_version WHERE version_num = (SELECT max(version_num) "
                             "FROM alembic_version)")
    store = Store(pg_url, lock_timeout_s=0.2)
    whys: list[str] = []
    with psycopg.connect(pg_url.replace("postgresql+psycopg", "postgresql"), application_name="stuck-writer") as c:
        c.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK_KEY,))
        assert not migrate_with_retry(store, StopAfterOne(), on_wait=whys.append)
        pid = c.info.backend_pid
        c.rollback()
    store.close()
    assert len(whys) == 1 and f"pid {pid} " in whys[0] and "stuck-writer" in whys[0], whys


def test_the_holder_is_described_from_its_pg_stat_activity_row() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=timezone.utc)
    row = (4242, "", None, None, "idle in transaction", now - timedelta(seconds=90), now - timedelta(seconds=300), now)
    text = holder_of(row).describe()
    assert text.startswith("PostgreSQL session pid 4242 (no application_name, client local socket, "
                           "idle in transaction since 2026-01-01T11:58:30Z (90s), transaction open since "
                           "2026-01-01T11:55:00Z (300s))"), text
    assert text.endswith("SELECT pg_terminate_backend(4242)")
    row = (7, "driftline", "10.0.0.5", 5555, "active", now, now, now)  # one transaction, one statement: one age
    assert "client 10.0.0.5:5555, active since 2026-01-01T12:00:00Z (0s))" in holder_of(row).describe()


def test_sqlite_names_no_holder(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'x.db'}")
    try:
        assert write_lock_holder(store) is None
    finally:
        store.close()


def test_a_holder_hidden_from_driftlines_role_is_not_named_a_local_socket() -> None:
    """SRE tryout: with driftline's role lacking pg_read_all_stats, pg_stat_activity shows another role's session
    with a NULL address, port and state (checked on PostgreSQL 15: this row), and the holder, connected over TCP,
    was named 'client local socket, state unknown'; a Unix-socket session's port is -1, not NULL."""
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=timezone.utc)
    text = holder_of((8508, "stuck-writer", None, None, "", None, None, now)).describe()
    assert "local socket" not in text and "state unknown" not in text, text
    assert "application_name 'stuck-writer'" in text and "pg_read_all_stats" in text, text
    assert text.endswith("SELECT pg_terminate_backend(8508)"), text
    local = holder_of((9, "psql", None, -1, "idle in transaction", now, now, now)).describe()
    assert "client local socket, idle in transaction since" in local, local
