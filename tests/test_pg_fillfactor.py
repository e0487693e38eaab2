"""PostgreSQL predictions pages keep room for updates (migration 0011_pgfill, fillfactor 80): an implicit negative
written into a stored prediction goes on the prediction's own page (a HOT update, no index entry added), not on
another page with new entries in both indexes, which is what a page copied full left no choice but to do. An outcome
does not rewrite its stored prediction at all (issue 18: the label in force is the outcome row's)."""

from __future__ import annotations

import psycopg

from driftline.config import from_dict
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


def test_updated_predictions_stay_on_their_page(pg_database) -> None:
    store = Store(pg_database.url, clock=lambda: T0 + 86400)
    store.migrate()
    pipeline = Pipeline(from_dict({"labels": {"policy": "implicit_negative_after", "implicit_negative_after": "1h",
                                              "horizon": "1d"}}), store)
    pipeline.process_batch([RawRecord("file:x", 0, i, pred(f"p{i:05d}", (i % 89) / 89, T0 + i))
                            for i in range(N)])
    before = _pages(pg_database.libpq_url)
    relabelled = [f"p{i:05d}" for i in range(N) if i % 10]  # the rest, one in ten, matures (a row update)
    pipeline.process_batch([RawRecord("file:x", 0, N + k, outcome(pid, k % 2, T0 + N + k))
                            for k, pid in enumerate(relabelled)])
    with psycopg.connect(pg_database.libpq_url) as conn:
        labelled = conn.execute("SELECT count(*) FROM predictions p JOIN outcomes o USING (prediction_id) "
                                "WHERE p.label IS NULL").fetchone()[0]
    assert labelled == len(relabelled)  # labelled by their outcome rows, their own rows untouched
    pipeline.process_batch([RawRecord("file:x", 0, 2 * N, outcome("later", 0, T0 + 3 * 3600))])  # the watermark
    counts = pipeline.maintain()
    store.close()
    assert counts[("implicit_negatives", "")] == N - len(relabelled)
    after = _pages(pg_database.libpq_url)
    moved = [pid for pid in before if after[pid] != before[pid]]
    assert not moved, f"{len(moved)} of {N} predictions left their page"
