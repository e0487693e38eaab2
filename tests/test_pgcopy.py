"""New join rows reach PostgreSQL by COPY (storage/pgcopy.py), stored ones by upsert, with the same join state as
the upsert-only path and as SQLite; a key copied although stored is upserted instead (nothing lost, no error)."""

from __future__ import annotations

import logging

import pytest
from sqlalchemy import text

from driftline.config import from_dict
from driftline.core.engine import OutcomeRecord, PredRecord
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.storage import bulk, pgcopy
from driftline.storage.store import Store

from helpers import outcome, pred

T0 = 1_700_000_000.0


def _store(url: str) -> Store:
    s = Store(url, clock=lambda: T0 + 30 * 86400)
    s.migrate()
    return s


def _stream() -> list[bytes]:
    """Predictions, outcomes before and after their predictions, corrections and duplicates, over three batches."""
    raws: list[bytes] = []
    for i in range(300):
        raws.append(pred(f"p{i}", (i % 10) / 10 + 0.05, T0 + i * 60, variant="AB"[i % 2]))
        if i % 3 == 0:
            raws.append(outcome(f"p{i}", int(i % 7 == 0), T0 + i * 60 + 30))
        if i % 5 == 0:
            raws.append(outcome(f"q{i}", 1, T0 + i * 60))  # an outcome before its prediction (next batch)
            raws.append(pred(f"p{i}", 0.5, T0 + i * 60, variant="AB"[i % 2]))  # a duplicate
        if i % 11 == 0 and i > 100:
            raws.append(outcome(f"p{i - 100}", 1, T0 + i * 60))  # a correction of a stored row
    raws += [pred(f"q{i}", 0.9, T0 + i * 60 + 5) for i in range(0, 300, 5)]
    return raws


def _ingest(store: Store) -> None:
    pipe = Pipeline(from_dict({}), store)
    raws = _stream()
    records = [RawRecord("file:x", 0, i, r) for i, r in enumerate(raws)]
    third = len(records) // 3
    for part in (records[:third], records[third:2 * third], records[2 * third:]):
        pipe.process_batch(part)


def _join_state(store: Store) -> tuple[list[tuple], list[tuple]]:
    with store.read() as conn:
        preds = conn.execute(text("SELECT prediction_id, model, variant, model_version, ts, score, flagged, shard, "
                                  "label, label_ts, implicit FROM predictions ORDER BY 1, 2, 3")).all()
        outs = conn.execute(text("SELECT prediction_id, label, ts, shard, matched FROM outcomes ORDER BY 1")).all()
    return [tuple(r) for r in preds], [tuple(r) for r in outs]


def test_new_rows_are_copied_and_the_join_state_equals_the_upsert_path_and_sqlite(pg_url, tmp_path, monkeypatch):
    copied: list[tuple[str, int]] = []
    real = pgcopy.copy_tables

    def counting(conn, copies):
        copied.extend((table, len(rows)) for table, _, _, rows in copies)
        return real(conn, copies)

    monkeypatch.setattr(pgcopy, "copy_tables", counting)
    pg = _store(pg_url)
    _ingest(pg)
    assert {t for t, _ in copied} == {"predictions", "outcomes"}
    assert sum(n for t, n in copied if t == "predictions") == 360  # each distinct prediction once, by COPY

    lite = _store(f"sqlite:///{tmp_path / 'ref.db'}")
    _ingest(lite)
    assert _join_state(pg) == _join_state(lite)

    with pg.write() as conn:  # the upsert-only path over the same stream: the same state
        conn.execute(text("DELETE FROM predictions"))
        conn.execute(text("DELETE FROM outcomes"))
        conn.execute(text("DELETE FROM positions"))
    monkeypatch.setattr(pgcopy, "copy_tables", lambda conn, copies: False)  # every row upserted
    _ingest(pg)
    assert _join_state(pg) == _join_state(lite)
    pg.close()
    lite.close()


def test_a_copied_key_that_is_stored_is_upserted_instead(pg_url, caplog):
    store = _store(pg_url)
    old = PredRecord("p1", "fraud", "v1", "A", T0, 0.7, True, 0)
    with store.write() as conn:
        bulk.write_predictions(conn, "postgresql", [old], frozenset())
        bulk.write_outcomes(conn, "postgresql", [OutcomeRecord("p1", 0, T0 + 1, 0, True)], frozenset())
    relabelled = PredRecord("p1", "fraud", "v1", "A", T0, 0.7, True, 0, label=1, label_ts=T0 + 2)
    new = PredRecord("p2", "fraud", "v1", "A", T0, 0.2, False, 0)
    with caplog.at_level(logging.WARNING, logger="driftline.storage.pgcopy"):
        with store.write() as conn:  # told nothing is stored: the copy meets p1 and is undone, both are upserted
            bulk.write_predictions(conn, "postgresql", [relabelled, new], frozenset())
            bulk.write_outcomes(conn, "postgresql", [OutcomeRecord("p1", 1, T0 + 2, 0, True)], frozenset())
    assert sum("already stored" in r.getMessage() for r in caplog.records) == 2
    preds, outs = _join_state(store)
    assert [(p[0], p[8], p[9]) for p in preds] == [("p1", 1, T0 + 2), ("p2", None, None)]
    assert outs == [("p1", 1, T0 + 2, 0, True)]
    store.close()


def test_a_batchs_new_predictions_and_outcomes_are_copied_under_one_savepoint(pg_url, monkeypatch):
    """One SAVEPOINT (and RELEASE) round trip and subtransaction per batch for both COPYs, not one per table."""
    from sqlalchemy import event

    calls: list[list[str]] = []
    real = pgcopy.copy_tables

    def recording(conn, copies):
        calls.append([table for table, _, _, _ in copies])
        return real(conn, copies)

    monkeypatch.setattr(pgcopy, "copy_tables", recording)
    store = _store(pg_url)
    savepoints: list[str] = []
    event.listen(store.engine, "before_cursor_execute",
                 lambda conn, cur, statement, *rest: savepoints.append(statement)
                 if statement.startswith("SAVEPOINT") else None)
    pipe = Pipeline(from_dict({}), store)
    pipe.process_batch([RawRecord("file:x", 0, 0, pred("p1", 0.3, T0)), RawRecord("file:x", 0, 1, outcome("q1", 1, T0))])
    assert calls == [["predictions", "outcomes"]] and len(savepoints) == 1
    store.close()


def test_a_stored_key_among_both_tables_copies_undoes_both_and_upserts_them(pg_url, caplog):
    store = _store(pg_url)
    with store.write() as conn:
        bulk.write_predictions(conn, "postgresql", [PredRecord("p1", "fraud", "v1", "A", T0, 0.7, True, 0)],
                               frozenset())
    from driftline.core.engine import StoredKeys

    relabelled = PredRecord("p1", "fraud", "v1", "A", T0, 0.7, True, 0, label=1, label_ts=T0 + 2)
    new = PredRecord("p2", "fraud", "v1", "A", T0, 0.2, False, 0)
    out = OutcomeRecord("p1", 1, T0 + 2, 0, True)
    with caplog.at_level(logging.WARNING, logger="driftline.storage.pgcopy"):
        with store.write() as conn:  # told nothing is stored: the copies meet p1 and are undone, all is upserted
            preds, outs = bulk.copy_new_join_rows(conn, [relabelled, new], [out], StoredKeys(frozenset(), frozenset()))
            assert (len(preds), len(outs)) == (2, 1)
            bulk.upsert_predictions(conn, preds)
            bulk.upsert_outcomes(conn, outs)
    assert sum("already stored" in r.getMessage() for r in caplog.records) == 1
    preds_stored, outs_stored = _join_state(store)
    assert [(p[0], p[8], p[9]) for p in preds_stored] == [("p1", 1, T0 + 2), ("p2", None, None)]
    assert outs_stored == [("p1", 1, T0 + 2, 0, True)]
    store.close()


def test_sqlite_never_copies(tmp_path, monkeypatch):
    monkeypatch.setattr(pgcopy, "copy_rows", lambda *a: pytest.fail("COPY on SQLite"))
    monkeypatch.setattr(pgcopy, "copy_tables", lambda *a: pytest.fail("COPY on SQLite"))
    store = _store(f"sqlite:///{tmp_path / 'x.db'}")
    _ingest(store)
    assert len(_join_state(store)[0]) == 360
    store.close()


def test_a_value_the_copy_refuses_is_raised_as_sqlalchemy_data_error(pg_url):
    """PostgreSQL refuses a NUL in text; raised from COPY as SQLAlchemy's DataError, as an INSERT's would be, so
    process_isolating stores the batch record by record (store_rejected dead letters)."""
    from sqlalchemy.exc import DataError

    store = _store(pg_url)
    with pytest.raises(DataError):
        with store.write() as conn:
            pgcopy.copy_rows(conn, "predictions", bulk.PRED_COLS, bulk._PRED_KINDS,
                             [("p\x00", "fraud", "A", "v1", T0, 0.5, True, 0, None, None, False, None)])
    store.close()


def test_a_connection_lost_during_the_copy_makes_the_store_unavailable_and_writes_nothing(pg_url):
    from driftline.storage.errors import StoreUnavailable

    store = _store(pg_url)
    admin = Store(pg_url)
    with pytest.raises(StoreUnavailable):
        with store.write() as conn:
            pid = conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
            with admin.engine.connect() as other:
                other.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid})
            bulk.write_predictions(conn, "postgresql", [PredRecord("p1", "fraud", "v1", "A", T0, 0.7, True, 0)],
                                   frozenset())
    assert _join_state(store) == ([], [])
    admin.close()
    store.close()
