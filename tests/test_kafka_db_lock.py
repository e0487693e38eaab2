"""The database answers but another writer holds its write lock (fourth SRE tryout, two `driftline run` on one
database): the consumer logged "database reachable again" as soon as a read succeeded, while it still could not
write. Reads never wait for the write lock (SQLite WAL, PostgreSQL reads take no lock), so only a write says the
database can be written again. SQLite file and PostgreSQL (advisory write lock), against the in-memory
kafka-python stand-in with topic ids."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from driftline.kafka.consumer import LiveConsumer
from driftline.storage.locking import WRITE_LOCK_KEY
from driftline.storage.store import Store
from kafka_service_support import make_events
from test_kafka_log_ids import _consumer
from test_kafka_loop import Clock, partitioned, total


@contextmanager
def _write_lock_held(url: str) -> Iterator[None]:
    """Another writer holding the database write lock (SQLite: a write transaction; PostgreSQL: the lock key)."""
    if url.startswith("sqlite"):
        conn = sqlite3.connect(url.split("///", 1)[1], isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            conn.execute("ROLLBACK")
            conn.close()
        return
    import psycopg

    with psycopg.connect(url.replace("postgresql+psycopg", "postgresql"), autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (WRITE_LOCK_KEY,))
        yield
        conn.execute("SELECT pg_advisory_unlock(%s)", (WRITE_LOCK_KEY,))


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: Any, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'live.db'}"
    return request.getfixturevalue("pg_url")


def _steps(lc: LiveConsumer, clock: Clock, n: int) -> None:
    for _ in range(n):
        lc.step()
        clock.t += 1.1


def _lines(caplog: Any, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if text in r.getMessage()]


def test_a_write_lock_held_by_another_writer_is_not_reported_as_the_database_back(
        db_url: str, tmp_path: Path, caplog: Any) -> None:
    """While the lock is held: positioning (it stores each partition's topic id) and a held batch wait for it,
    the log and /readyz say so, and nothing says the database is back although reads succeed. Once released,
    one 'database writable again' and every record is stored; a member whose partitions need no write (already
    positioned, a revoked batch) checks with a write of its own before saying so."""
    caplog.set_level("INFO", logger="driftline")
    events = make_events(tmp_path, days=0.3, per_day=1500)
    store = Store(db_url, lock_timeout_s=0.2)
    store.migrate()
    clock = Clock()
    logs = partitioned(events.records)
    lc, fake = _consumer(store, logs, clock, {"p": "id-p", "o": "id-o"})
    with _write_lock_held(db_url):
        fake.rebalance(set(logs))
        _steps(lc, clock, 12)
        assert total(store) == 0 and lc.pending
        assert _lines(caplog, "write lock is held by another writer")
        assert not _lines(caplog, "reachable again") and not _lines(caplog, "writable again")
        ok, why = lc.ready()
        assert not ok and "write lock is held by another writer" in why
    _steps(lc, clock, 40)
    assert total(store) == len(events.records) and lc.ready()[0]
    assert len(_lines(caplog, "database writable again")) == 1 and not _lines(caplog, "reachable again")

    caplog.clear()  # a batch held on the lock, its partitions revoked and assigned again (positioned by reads)
    fake.logs = logs = partitioned(events.records + events.records[:40])
    with _write_lock_held(db_url):
        _steps(lc, clock, 3)
        assert lc.held is not None
        fake.rebalance(set())
        _steps(lc, clock, 2)
        assert lc.held is None and not lc.owned
        fake.rebalance(set(logs))
        _steps(lc, clock, 6)
        assert not lc.pending and lc.held is not None
        assert not _lines(caplog, "reachable again") and not _lines(caplog, "writable again")
        assert not lc.ready()[0]
    _steps(lc, clock, 10)
    assert lc.ready()[0] and len(_lines(caplog, "database writable again")) == 1
    assert total(store) == len(events.records) + 40

    caplog.clear()  # a batch held on the lock, then every partition revoked: nothing left that would write
    fake.logs = logs = partitioned(events.records + events.records[:80])
    with _write_lock_held(db_url):
        _steps(lc, clock, 3)
        assert lc.held is not None
        fake.rebalance(set())
        _steps(lc, clock, 4)
        assert lc.held is None and not lc.owned and not lc.ready()[0]
    _steps(lc, clock, 4)  # an empty write transaction says so
    assert lc.ready()[0] and len(_lines(caplog, "database writable again")) == 1
    assert not _lines(caplog, "reachable again")
