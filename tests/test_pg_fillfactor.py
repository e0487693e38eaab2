"""PostgreSQL predictions pages keep room for relabels (migration 0011_pgfill, fillfactor 80): a label moving onto a
stored prediction is written on the prediction's own page (a HOT update, no index entry added), not on another page
with new entries in both indexes, which is what a page copied full left no choice but to do."""

from __future__ import annotations

import psycopg

from driftline.config import Config
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.storage.store import Store

from helpers import outcome, pred

T0 = 1_700_000_000.0
N = 3000


def _pages(libpq_url: str) -> dict[str, int]:
    """Heap page of each stored prediction's current row version."""
    with psycopg.connect(libpq_url) as conn:
        rows = conn.execute("SELECT prediction_id, (ctid::text::point)[0]::int FROM predictions").fetchall()
    return dict(rows)


def test_relabelled_predictions_stay_on_their_page(pg_database) -> None:
    store = Store(pg_database.url, clock=lambda: T0 + 86400)
    store.migrate()
    pipeline = Pipeline(Config(), store)
    pipeline.process_batch([RawRecord("file:x", 0, i, pred(f"p{i:05d}", (i % 89) / 89, T0 + i))
                            for i in range(N)])
    before = _pages(pg_database.libpq_url)
    relabelled = [f"p{i:05d}" for i in range(0, N, 10)]
    pipeline.process_batch([RawRecord("file:x", 0, N + k, outcome(pid, k % 2, T0 + N + k))
                            for k, pid in enumerate(relabelled)])
    store.close()
    after = _pages(pg_database.libpq_url)
    with psycopg.connect(pg_database.libpq_url) as conn:
        labelled = conn.execute("SELECT count(*) FROM predictions WHERE label IS NOT NULL").fetchone()[0]
    assert labelled == len(relabelled)
    moved = [pid for pid in relabelled if after[pid] != before[pid]]
    assert not moved, f"{len(moved)} of {len(relabelled)} relabelled predictions left their page"
