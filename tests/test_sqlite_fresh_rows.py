"""SQLite: the outcome rows a batch's lookup found absent go in by INSERT OR ROLLBACK, which keeps no statement
journal (issue 18: the upsert copied every stored page it changed into one, past 64 KiB into a temp file, and a new
outcome row lands among days-old ids, ~1 page a row); the rows it found stored are upserted as before, and the stored
rows are the same as the all-upsert route's."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from sqlalchemy.exc import IntegrityError

from driftline.core.engine import OutcomeRecord, PredRecord
from driftline.storage import bulk
from driftline.storage.store import Store

STORED = 40_000
"""Ids stored before the batch (even numbers): the batch's new ids (odd) fall between them, on ~1 page a row."""


def _pred(i: int, label: int | None = None) -> PredRecord:
    return PredRecord(f"tx-{i}", "fraud", "v1", "A", 1e9 + i, (i % 97) / 97, i % 3 == 0, i % 4, label,
                      None if label is None else 2e9 + i, False, None if i % 5 else {"segment": f"s{i % 7}"})


def _out(i: int, label: int = 1) -> OutcomeRecord:
    return OutcomeRecord(f"tx-{i}", label, 2e9 + i, i % 4, i % 2 == 0)


def _store(tmp_path: Path, name: str) -> Store:
    store = Store(f"sqlite:///{tmp_path / name}")
    store.migrate()
    with store.write() as conn:  # no lookup's keys: everything upserted (the route of maintenance writes)
        bulk.write_predictions(conn, "sqlite", [_pred(i) for i in range(0, 2 * STORED, 2)])
        bulk.write_outcomes(conn, "sqlite", [_out(i) for i in range(0, 2 * STORED, 2)])
    return store


def _written_bytes() -> int:
    with open("/proc/self/io") as f:
        return int(next(line for line in f if line.startswith("wchar:")).split()[1])


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="counts the process's written bytes (Linux)")
def test_a_batchs_new_outcome_rows_write_nothing_before_the_commit(tmp_path: Path) -> None:
    store = _store(tmp_path, "j.db")
    new = list(range(1, 2 * STORED, 102))  # odd: new ids scattered among the stored ones
    try:
        with store.write() as conn:
            before = _written_bytes()
            bulk.write_outcomes(conn, "sqlite", [_out(i) for i in new], frozenset())  # none stored (the lookup)
            # the upsert's statement journal spilled ~1 page a row to a temp file (~1.6 MB here)
            assert _written_bytes() - before < 64 * 1024
    finally:
        store.close()


def _rows(store: Store) -> list[list[tuple[object, ...]]]:
    with store.read() as conn:
        return [sorted(map(tuple, conn.exec_driver_sql(f"SELECT * FROM {t}").fetchall()))
                for t in ("predictions", "outcomes")]


@pytest.mark.parametrize("seed", range(3))
def test_the_split_route_stores_the_rows_of_the_all_upsert_route(tmp_path: Path, seed: int) -> None:
    rnd = random.Random(seed)
    ids = rnd.sample(range(2 * STORED + 2000), 3000)  # stored (even, below 2 * STORED) and new ones
    preds = [_pred(i, rnd.choice([None, 0, 1])) for i in ids[:1500]]  # stored ones matured or relabelled
    outs = [_out(i, rnd.choice([0, 1])) for i in ids[1500:]]  # stored ones replaced
    stores = [_store(tmp_path, "split.db"), _store(tmp_path, "upsert.db")]
    try:
        for store, split in zip(stores, (True, False)):
            with store.write() as conn:
                view = bulk.load_join(conn, "sqlite", [f"tx-{i}" for i in ids])
                assert view.stored is not None and view.stored.preds and view.stored.outcomes
                bulk.write_predictions(conn, "sqlite", preds, view.stored.preds if split else None)
                bulk.write_outcomes(conn, "sqlite", outs, view.stored.outcomes if split else None)
        assert _rows(stores[0]) == _rows(stores[1])
    finally:
        for store in stores:
            store.close()


def test_a_new_key_stored_after_all_fails_the_whole_transaction(tmp_path: Path) -> None:
    """Cannot happen while the write lock is held from the lookup to the commit; should it, nothing is written."""
    store = _store(tmp_path, "k.db")
    try:
        rows = _rows(store)
        with pytest.raises(IntegrityError), store.write() as conn:
            bulk.write_outcomes(conn, "sqlite", [_out(1)], frozenset())
            bulk.write_outcomes(conn, "sqlite", [_out(0, 0)], frozenset())  # stored: the lookup would have said so
        assert _rows(store) == rows
    finally:
        store.close()
