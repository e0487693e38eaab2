"""Two writers owning different partitions (shards) of one PostgreSQL database, batches interleaved, end in the
state of one sequential run — including outcomes that arrive on the other writer's partition, so a batch of one
shard moves the buckets and join rows of the other (what keeps one write lock for all shards, see README
"Capacity planning")."""

from __future__ import annotations

import random
import threading
from pathlib import Path

import pytest

from driftline.config import Config
from driftline.core.engine import BUCKET_SHARD
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.storage.store import Store
from helpers import outcome, pred
from test_writers_property import T0, state


def _stream(seed: int, ids: int = 60) -> list[list[bytes]]:
    """Per partition, its events: an id's predictions (duplicates included) always on partition id % 2, its
    outcomes (corrections included) on either partition."""
    rng = random.Random(seed)
    parts: list[list[bytes]] = [[], []]
    for _ in range(5 * ids):
        n = rng.randrange(ids)
        if rng.random() < 0.45:
            parts[n % 2].append(pred(f"p{n}", score=(n * 37 % 100) / 100, ts=T0 + 600 * n, variant="AB"[n % 3 % 2]))
        else:
            parts[rng.randrange(2)].append(outcome(f"p{n}", rng.randrange(2), T0 + 600 * n + 3600 * rng.randrange(1, 6)))
    return parts


def _write(url: str, parts: list[list[bytes]], batch: int, concurrent: bool) -> None:
    """Each partition in batches with shard = partition: one thread per partition (batches started together
    round by round), or one thread writing partition 0 and then partition 1."""
    rounds = max((len(p) + batch - 1) // batch for p in parts)
    barrier = threading.Barrier(len(parts)) if concurrent else None
    errors: list[BaseException] = []

    def writer(partitions: list[int]) -> None:
        store = Store(url)
        pipeline = Pipeline(Config(), store, clock=lambda: T0 + 400 * 86400)
        try:
            for p in partitions:
                for r in range(rounds):
                    chunk = parts[p][r * batch:(r + 1) * batch]
                    if barrier is not None:
                        barrier.wait(timeout=60)
                    if chunk:
                        pipeline.process_batch([RawRecord("events", p, r * batch + j, line)
                                                for j, line in enumerate(chunk)], shard_of=lambda rec: rec.partition)
        except BaseException as err:  # noqa: BLE001 - reported by the test
            errors.append(err)
            if barrier is not None:
                barrier.abort()
        finally:
            store.close()

    groups = [[0], [1]] if concurrent else [[0, 1]]
    threads = [threading.Thread(target=writer, args=(g,)) for g in groups]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_two_shards_written_concurrently_on_postgresql_equal_sequential(tmp_path: Path, pg_url: str,
                                                                         seed: int) -> None:
    parts = _stream(seed)
    seq = f"sqlite:///{tmp_path / 'seq.db'}"
    for url in (seq, pg_url):
        Store(url).migrate()
    _write(seq, parts, batch=7, concurrent=False)
    _write(pg_url, parts, batch=7, concurrent=True)
    want = state(seq)
    assert {k[4] for k in want["buckets"]} == {BUCKET_SHARD}  # both shards' predictions count in one row an hour
    assert state(pg_url) == want
    for url in (seq, pg_url):  # while their join rows keep their partitions
        with Store(url).read() as conn:
            assert {int(r[0]) for r in conn.exec_driver_sql("SELECT DISTINCT shard FROM predictions")} == {0, 1}
