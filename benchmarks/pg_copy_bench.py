"""New join rows on PostgreSQL: binary COPY (storage/pgcopy.py, what a batch does now for rows its lookup proved
absent) against INSERT … SELECT unnest(…) ON CONFLICT DO UPDATE (what it did for every row), the same rows into
the same growing table, rounds alternating; then `replay` of the simulated stream into PostgreSQL with and
without the copy, alternating. Prints wall seconds and the ratio copy ÷ upsert of each (lower is better).

Usage: python benchmarks/pg_copy_bench.py [--pg URL] [--rows N] [--rounds K] [--per-day N] [--days D] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from sqlalchemy import create_engine, text

from driftline.config import Config
from driftline.core.engine import PredRecord
from driftline.ingest.pipeline import Pipeline
from driftline.ingest.replay import replay
from driftline.storage import bulk
from driftline.storage.store import Store

from bench_common import simulated_stream


@contextmanager
def scratch_store(admin: str) -> Iterator[Store]:
    """A migrated Store in a schema of its own, dropped afterwards."""
    schema = "bench_" + uuid.uuid4().hex[:8]
    engine = create_engine(admin.replace("postgresql://", "postgresql+psycopg://", 1))
    with engine.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    sep = "&" if "?" in admin else "?"
    store = Store(f"{admin}{sep}options=-csearch_path%3D{schema}")
    store.migrate()
    try:
        yield store
    finally:
        store.close()
        with engine.begin() as conn:
            conn.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        engine.dispose()


def new_records(n: int, rng: random.Random) -> list[PredRecord]:
    return [PredRecord(uuid.UUID(int=rng.getrandbits(128)).hex, "fraud", "v1", "control", 1.7e9 + i, rng.random(),
                       rng.random() >= 0.5, 0) for i in range(n)]


def statement_rounds(admin: str, rows: int, rounds: int) -> dict[str, list[float]]:
    """Seconds to write `rows` new predictions per round, by COPY and by upsert, alternating into one table."""
    rng = random.Random(7)
    ways: dict[str, frozenset[tuple[str, str, str]] | None] = {"copy": frozenset(), "upsert": None}
    spent: dict[str, list[float]] = {w: [] for w in ways}
    with scratch_store(admin) as store:
        for _ in range(rounds):
            for way, stored in ways.items():
                records = new_records(rows, rng)
                with store.write() as conn:
                    t = time.perf_counter()
                    bulk.write_predictions(conn, "postgresql", records, stored)
                    spent[way].append(time.perf_counter() - t)
    return spent


def replay_rounds(admin: str, path: str, rounds: int) -> dict[str, list[float]]:
    """Wall seconds of `replay` into a fresh PostgreSQL schema, with and without the copy, alternating."""
    spent: dict[str, list[float]] = {"copy": [], "upsert": []}
    real: Callable[..., list] = bulk._copied
    for _ in range(rounds):
        for way in spent:
            bulk._copied = real if way == "copy" else (lambda conn, table, cols, kinds, rows, is_stored: rows)
            with scratch_store(admin) as store:
                t = time.perf_counter()
                replay(Pipeline(Config(), store), path)
                spent[way].append(time.perf_counter() - t)
    bulk._copied = real
    return spent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pg", default=os.environ.get("DRIFTLINE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test"))
    ap.add_argument("--rows", type=int, default=50_000)
    ap.add_argument("--rounds", type=int, default=4)
    args, _ = ap.parse_known_args()
    _, path = simulated_stream(1800)
    for title, spent in (("new predictions, one statement", statement_rounds(args.pg, args.rows, args.rounds)),
                         ("replay into PostgreSQL", replay_rounds(args.pg, path, max(2, args.rounds // 2)))):
        med = {w: statistics.median(s) for w, s in spent.items()}
        rounds = ", ".join(f"{w} " + "/".join(f"{x:.2f}" for x in s) for w, s in spent.items())
        print(f"{title:<32} copy {med['copy']:.3f} s, upsert {med['upsert']:.3f} s (medians): "
              f"ratio copy ÷ upsert {med['copy'] / med['upsert']:.2f}   [{rounds}]")


if __name__ == "__main__":
    main()
