"""The shards holding prediction join rows and the oldest of those predictions (Store.join_shards,
Store.oldest_prediction; Store.stored_shards adds the outcomes' shards, for maintenance), read by one index seek a
shard on the `(shard, ts)` index: the exact ranking and the label delays read the join rows of every shard listed
(bucket rows no longer say which: one row an hour), and compaction's cutoff stops at the oldest prediction still
held, which `min(ts)` over the table found by reading the whole index."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from driftline.config import Config
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.storage.store import Store
from helpers import outcome, pred

T0 = 1_790_000_000.0


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'shards.db'}"
    return request.getfixturevalue("pg_url")


def _ingest(store: Store, n: int, shards: tuple[int, ...], first: int = 0) -> None:
    """n predictions, one every half hour back from T0, spread over `shards` (the record's partition is its shard)."""
    lines = [(pred(f"p{first + i}", 0.3, T0 - 1800 * (first + i)), shards[i % len(shards)]) for i in range(n)]
    Pipeline(Config(), store, clock=lambda: T0).process_batch(
        [RawRecord("predictions", shard, first + i, line) for i, (line, shard) in enumerate(lines)])


def test_shards_and_the_oldest_prediction(url: str) -> None:
    store = Store(url, clock=lambda: T0)
    store.migrate()
    assert store.join_shards() == [] and store.oldest_prediction() is None
    _ingest(store, 40, (7, 0, 3))
    assert store.join_shards() == [0, 3, 7]
    with store.read() as conn:
        assert store.oldest_prediction() == conn.exec_driver_sql("SELECT min(ts) FROM predictions").scalar()
    assert store.oldest_prediction() == T0 - 1800 * 39
    assert store.stored_shards() == [0, 3, 7]
    Pipeline(Config(), store, clock=lambda: T0).process_batch(  # an outcome waiting for its prediction on shard 9
        [RawRecord("outcomes", 9, 0, outcome("later", 1, T0))])
    assert store.join_shards() == [0, 3, 7] and store.stored_shards() == [0, 3, 7, 9]
    store.close()


def _vm_steps(store: Store, call: Any) -> tuple[Any, int]:
    """call(store)'s answer and how many SQLite VM instructions its statements on `predictions` ran."""
    steps = [0]

    def count() -> int:
        steps[0] += 1
        return 0

    def watch(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        on = "FROM predictions" in statement
        conn.connection.driver_connection.set_progress_handler(count if on else None, 1)

    event.listen(store.engine, "before_cursor_execute", watch)
    try:
        return call(store), steps[0]
    finally:
        event.remove(store.engine, "before_cursor_execute", watch)


def test_one_seek_a_shard_whatever_the_rows_held(tmp_path: Path) -> None:
    """The same SQLite VM steps with 30 predictions held and with 3,000 (253,308 steps against 372 on a
    50 k-prediction store of six partitions before)."""
    store = Store(f"sqlite:///{tmp_path / 'seeks.db'}", clock=lambda: T0)
    store.migrate()
    _ingest(store, 30, (0, 1, 2))
    small = [_vm_steps(store, Store.oldest_prediction), _vm_steps(store, Store.join_shards)]
    _ingest(store, 2970, (0, 1, 2), first=30)
    large = [_vm_steps(store, Store.oldest_prediction), _vm_steps(store, Store.join_shards)]
    assert small[0][0] == T0 - 1800 * 29 and large[0][0] == T0 - 1800 * 2999
    assert small[1][0] == large[1][0] == [0, 1, 2]
    assert [s for _, s in large] == [s for _, s in small], (small, large)
    store.close()
