"""A SQLite reader transaction left open (a `sqlite3` shell, a long backup) stops checkpoints, so the -wal file grows
with every write meanwhile. Soak tryout: a 4-minute reader during `run` left a 358 MB -wal next to an 11 MB database,
and it stayed that size for as long as `run` had the database open. With PRAGMA journal_size_limit the file is cut
back once a checkpoint has emptied it."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from driftline.storage import locking
from driftline.storage.store import Store

LIMIT = 512 * 1024


def _write(store: Store, n: int, tag: str) -> None:
    """n write transactions of ~200 kB each (the size of a live batch's rewritten buckets)."""
    rng = random.Random(tag)
    for i in range(n):  # other bytes every time: SQLite writes only the changed pages of a value of the same size
        store.set_meta(f"soak-{tag}-{i % 4}", "".join(rng.choices("abcdefgh", k=200_000)))


def test_the_wal_file_shrinks_back_after_a_long_reader_ends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(locking, "WAL_SIZE_LIMIT", LIMIT, raising=False)  # absent before the limit existed
    db = tmp_path / "d.db"
    store = Store(f"sqlite:///{db}")
    store.migrate()
    wal = Path(f"{db}-wal")
    reader = sqlite3.connect(db, isolation_level=None)
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM meta").fetchone()  # holds its snapshot: no checkpoint can pass it
        _write(store, 60, "during")
        grown = wal.stat().st_size
        assert grown > 10 * 1024 * 1024  # the reader kept every page of those writes in the -wal
        reader.execute("COMMIT")
    finally:
        reader.close()
    _write(store, 25, "after")  # past the autocheckpoint (at WAL_SIZE_LIMIT, LIMIT here): it completes, and the
    # next writer restarts the -wal, cut to LIMIT, then grown by the writes since (at most LIMIT bytes before the
    # next checkpoint); without the limit it keeps its largest size
    assert wal.stat().st_size < grown // 2, f"-wal stayed at {wal.stat().st_size} bytes (was {grown} with the reader)"
    with store.read() as conn:  # nothing lost on the way
        assert conn.exec_driver_sql("SELECT count(*) FROM meta WHERE key LIKE 'soak-%'").scalar() == 8
    store.close()
