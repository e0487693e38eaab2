"""The end of a batch's write on PostgreSQL (storage/pgtail.py): counters, newest times, positions and meta as one
unnest statement each, pipelined, leaving the rows SQLite's per-row upserts leave; a value refused there is raised
as SQLAlchemy's DataError, as the per-row upserts raised it (process_isolating then stores record by record)."""

from __future__ import annotations

import pytest
from sqlalchemy import event, text
from sqlalchemy.exc import DataError

from driftline.config import from_dict
from driftline.core.engine import EngineResult
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.storage import pgtail
from driftline.storage.store import Store

from helpers import outcome, pred

T0 = 1_700_000_000.0
TABLES = ("SELECT name, label, value FROM counters ORDER BY 1, 2",
          "SELECT source, partition, next_offset FROM positions ORDER BY 1, 2",
          "SELECT key, value FROM meta WHERE key LIKE 'test.%' ORDER BY 1")


def _store(url: str) -> Store:
    s = Store(url, clock=lambda: T0 + 30 * 86400)
    s.migrate()
    return s


def _ingest(store: Store) -> None:
    pipe = Pipeline(from_dict({}), store)
    raws: list[bytes] = []
    for i in range(120):
        raws.append(pred(f"p{i}", (i % 10) / 10 + 0.05, T0 + i * 60, variant="AB"[i % 2]))
        if i % 3 == 0:
            raws.append(outcome(f"p{i}", int(i % 7 == 0), T0 + i * 60 + 30))
        if i % 10 == 0:
            raws.append(b'{"type": "prediction", "broken": ')  # a dead letter (counted by reason)
            raws.append(pred(f"p{i}", 0.5, T0 + i * 60, variant="AB"[i % 2]))  # a duplicate
    for n, part in enumerate((raws[:50], raws[50:100], raws[100:])):
        start = {0: 0, 1: 50, 2: 100}[n]
        pipe.process_batch([RawRecord(f"file:{n % 2}", 0, start + i, r) for i, r in enumerate(part)],
                           meta={"test.batch": str(n), f"test.only{n}": "x"})


def _rows(store: Store) -> list[list[tuple]]:
    with store.read() as conn:
        return [[tuple(r) for r in conn.execute(text(q))] for q in TABLES]


def test_the_batch_tail_is_pipelined_and_stores_what_sqlite_stores(pg_url, tmp_path, monkeypatch):
    calls: list[int] = []
    real = pgtail.write

    def counting(conn, counters, newest, positions, meta):
        calls.append(len(counters) + len(newest) + len(positions) + len(meta))
        return real(conn, counters, newest, positions, meta)

    monkeypatch.setattr(pgtail, "write", counting)
    pg = _store(pg_url)
    per_row: list[str] = []

    @event.listens_for(pg.engine, "before_cursor_execute")
    def seen(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        if statement.startswith(("INSERT INTO counters", "INSERT INTO positions", "INSERT INTO meta")):
            per_row.append(statement)

    _ingest(pg)
    assert len(calls) == 3 and all(calls)
    assert per_row == []  # no SQLAlchemy upserts left in a batch
    lite = _store(f"sqlite:///{tmp_path / 'ref.db'}")
    _ingest(lite)
    stored = _rows(pg)
    assert stored == _rows(lite)
    counters, positions, meta = stored
    assert any(n == "dead_letters" and v == 12 for n, _, v in counters), counters
    assert positions == [("file:0", 0, 184), ("file:1", 0, 100)]
    assert meta == [("test.batch", "2"), ("test.only0", "x"), ("test.only1", "x"), ("test.only2", "x")]
    pg.close()
    lite.close()


def test_a_value_refused_in_the_pipeline_is_a_data_error_and_nothing_is_written(pg_url):
    store = _store(pg_url)
    with pytest.raises(DataError):
        with store.write() as conn:
            store.commit_batch(conn, EngineResult(), [], {("file:x", 0): 7}, meta={"k" * 300: "v"})
    with store.read() as conn:
        assert conn.execute(text("SELECT count(*) FROM positions")).scalar_one() == 0
    store.close()
