"""Two databases holding the same buckets give the same numbers, whatever order the rows lie in on disk.

Readers sum floats (Brier, log loss, score means) across buckets, and float addition depends on order. PostgreSQL
returns rows as they lie on disk, so before the reads were ordered by key the same buckets inserted in another
order (another writer interleaving, a restore, a VACUUM FULL) gave `metrics --json` and `calibration --json`
differing in the 15th–17th digit, and compaction stored day rows that differed too. The table is rewritten here
in reversed key order and everything must stay byte for byte the same.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from driftline.config import Config
from driftline.ingest.pipeline import Pipeline
from driftline.ingest.replay import replay
from driftline.storage.compaction import compact
from driftline.storage.store import Store
from pg_fixtures import create_database, drop_database

END = "2026-11-30T00:00:00Z"
KEY = "model, model_version, variant, bucket_start, shard"


@pytest.fixture(scope="module")
def events(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four simulated days, two variants (about 4 k events)."""
    out = tmp_path_factory.mktemp("sim") / "events.jsonl"
    done = subprocess.run([sys.executable, "-m", "driftline.cli", "simulate", "--days", "4", "--per-day", "1000",
                           "--end", END, "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture
def two_urls(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """Two fresh databases of the backend given by the test's `backend` parameter."""
    if request.node.callspec.params["backend"] == "sqlite":
        yield f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
        return
    first = request.getfixturevalue("pg_database")
    name = first.name + "_b"
    create_database(name)
    try:
        yield first.url, first.url.rsplit("/", 1)[0] + "/" + name
    finally:
        drop_database(name)


def _rewrite(store: Store, order: str) -> None:
    """Delete every bucket and insert it again in `order` (so the rows lie on disk in that order)."""
    with store.write() as conn:
        conn.execute(text("CREATE TEMPORARY TABLE held AS SELECT * FROM buckets"))
        conn.execute(text("DELETE FROM buckets"))
        conn.execute(text(f"INSERT INTO buckets SELECT * FROM held ORDER BY {order}"))
        conn.execute(text("DROP TABLE held"))


def _physical_keys(store: Store) -> list[tuple]:
    with store.read() as conn:
        return [tuple(r) for r in conn.execute(text(f"SELECT {KEY} FROM buckets"))]


def _cli(url: str, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "driftline.cli", "--db", url, *args, "--at", END, "--json"],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "DRIFTLINE_LOG_LEVEL": "WARNING"})
    assert done.returncode == 0, done.stderr
    return done.stdout


def _stored(store: Store) -> list[tuple]:
    with store.read() as conn:
        return [tuple(r) for r in conn.execute(text(f"SELECT {KEY}, data FROM buckets ORDER BY {KEY}"))]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_readouts_and_compaction_do_not_depend_on_the_rows_physical_order(
        backend: str, events: Path, two_urls: tuple[str, str]) -> None:
    stores = [Store(url) for url in two_urls]
    for store in stores:
        store.migrate()
        replay(Pipeline(Config(), store), str(events))
    a, b = stores
    keys = [(r.model, r.model_version, r.variant, r.bucket_start, r.shard) for r in a.buckets(None, 0, 2**40)]
    assert keys == sorted(keys) and len(keys) > 100
    assert _stored(a) == _stored(b)  # the same buckets, byte for byte

    _rewrite(b, " DESC, ".join(KEY.split(", ")) + " DESC")
    if backend == "postgresql":  # the premise: PostgreSQL now hands b's rows out in another order than a's
        assert _physical_keys(b) != _physical_keys(a)
    assert [(r.model, r.model_version, r.variant, r.bucket_start, r.shard) for r in b.buckets(None, 0, 2**40)] == keys
    for cmd in ("metrics", "calibration"):
        assert _cli(two_urls[1], cmd, "--window", "4d") == _cli(two_urls[0], cmd, "--window", "4d"), cmd

    # compaction merges a day's rows in key order whatever their physical order
    newest = float(max(k[3] for k in keys))
    for store in stores:
        compact(store, newest)
    assert any(r[4] == -1 for r in _stored(a))
    assert _stored(b) == _stored(a)
    for store in stores:
        store.close()
