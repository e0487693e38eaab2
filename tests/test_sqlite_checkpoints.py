"""SQLite checkpoints once the -wal holds WAL_SIZE_LIMIT bytes, not at SQLite's default of 1,000 pages (~4 MB): at
the default nearly every replay batch, and every few live batches, copied the pages it wrote into the database file
and synced both files, so the pages every batch rewrites (an hour's bucket row, a join table's newest leaf) were
copied again each time (replay in batches of 300: 364 MB written and 179 fdatasync calls; 281 MB and 17 now)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from driftline.storage import locking
from driftline.storage.store import Store

LIMIT = 8 * 1024 * 1024
"""A checkpoint size above SQLite's default of 1,000 pages (4 MB at 4 kB pages), small enough to pass in a test."""


def _write(store: Store, n: int, tag: str) -> None:
    """n write transactions of ~200 kB of new bytes each."""
    rng = random.Random(tag)
    for i in range(n):
        store.set_meta(f"ck-{tag}-{i}", "".join(rng.choices("abcdefgh", k=200_000)))


def test_every_connection_checkpoints_at_the_wal_size_limit(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'd.db'}")
    store.migrate()
    with store.write() as conn:
        page = conn.exec_driver_sql("PRAGMA page_size").scalar()
        assert conn.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == locking.WAL_SIZE_LIMIT // page
    with store.read() as conn:  # a reader's connection too: any connection that commits may run the checkpoint
        assert conn.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == locking.WAL_SIZE_LIMIT // page
    store.close()


def test_the_database_file_is_written_only_when_the_wal_reaches_the_limit(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(locking, "WAL_SIZE_LIMIT", LIMIT)
    db = tmp_path / "d.db"
    store = Store(f"sqlite:///{db}")
    store.migrate()
    before = db.stat().st_size
    _write(store, 25, "under")  # ~5 MB of frames: past SQLite's default of 1,000 pages, under the limit
    wal = Path(f"{db}-wal").stat().st_size
    assert wal > 4_100_000, wal  # the writes did pass the default's 1,000 pages
    assert db.stat().st_size == before, "a checkpoint copied the -wal into the database file before the limit"
    _write(store, 25, "past")  # ~10 MB in all: a commit past the limit checkpoints
    assert db.stat().st_size > before + 4_000_000
    with store.read() as conn:  # nothing lost on the way
        assert conn.exec_driver_sql("SELECT count(*) FROM meta WHERE key LIKE 'ck-%'").scalar() == 50
    store.close()


def test_checkpoint_pages_follow_the_page_size() -> None:
    assert locking.checkpoint_pages(4096) == locking.WAL_SIZE_LIMIT // 4096 == 16384
    assert locking.checkpoint_pages(65536) == 1024
