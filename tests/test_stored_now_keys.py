"""Replay's log of the join rows it stored as new (Pipeline.stored_now) is given the batch's upserted keys without a
Python generator frame per key (issue 18): on SQLite the lookup records no stored keys, so the upserts go as they
are; on PostgreSQL the stored ones are filtered out at C level. The keys logged, and their order, are unchanged."""

from __future__ import annotations

import types
from collections.abc import Iterable
from typing import Any

from driftline.config import Config
from driftline.core.engine import PredKey
from driftline.ingest.pipeline import Pipeline
from driftline.ingest.stored_now import KeyLog
from driftline.storage.store import Store

from helpers import outcome, pred

T0 = 1_700_000_000.0


class Recording(KeyLog):
    """A KeyLog keeping what it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.given: list[Any] = []
        self.keys: list[PredKey] = []

    def add(self, keys: Iterable[PredKey]) -> None:
        self.given.append(keys)
        listed = list(keys)
        self.keys += listed
        super().add(listed)


def test_new_keys_logged_without_a_generator(tmp_path: Any) -> None:
    from driftline.ingest.pipeline import RawRecord

    store = Store(f"sqlite:///{tmp_path / 'k.db'}")
    store.migrate()
    pipe = Pipeline(Config(), store, clock=lambda: T0 + 3600)
    log = pipe.stored_now = Recording()
    lines = [pred(f"p{i}", 0.1, T0 + i, variant="AB"[i % 2]) for i in range(20)] + [outcome("p3", 1, T0 + 30)]
    pipe.process_batch([RawRecord("file:x", 0, i, line) for i, line in enumerate(lines)])
    later = [pred("p3", 0.1, T0 + 3, variant="B"), pred("q1", 0.2, T0 + 40), outcome("p5", 0, T0 + 41)]
    pipe.process_batch([RawRecord("file:x", 0, 100 + i, line) for i, line in enumerate(later)])
    with store.read() as conn:
        stored = conn.exec_driver_sql("SELECT prediction_id, model, variant FROM predictions").fetchall()
    store.close()
    assert not any(isinstance(g, types.GeneratorType) for g in log.given)
    assert sorted(log.keys) == sorted(map(tuple, stored)) and len(log.keys) == 21  # p3/B was stored already
    assert all(log.contains(k) for k in log.keys)
