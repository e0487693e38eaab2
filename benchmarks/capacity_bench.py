"""Capacity: bytes per pending prediction, per outcome and per bucket, measured from the database after a replay,
and what they extrapolate to at 1 M and 100 M predictions a day with a 90-day label horizon.

Usage: python benchmarks/capacity_bench.py [--per-day N] [--days D] [--workdir DIR] [--pg URL]
Replays the simulated 8-feature stream into a fresh SQLite database (and into PostgreSQL with --pg, whose tables it
truncates first: use a scratch database) and reads each table's size with its indexes (SQLite `dbstat`, PostgreSQL
`pg_total_relation_size`). Measured figures and extrapolated ones are printed separately. The replay rate is given
per second of wall time and per CPU second of this process (PostgreSQL's server CPU is not in the latter).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import time

from sqlalchemy import text

from driftline.config import Config
from driftline.ingest.pipeline import Pipeline
from driftline.ingest.replay import replay
from driftline.storage.store import Store

from bench_common import simulated_stream

HORIZON_DAYS = 90
TABLES = {"predictions": ("predictions", "sqlite_autoindex_predictions_1", "ix_predictions_shard_ts"),
          "outcomes": ("outcomes", "sqlite_autoindex_outcomes_1", "ix_outcomes_shard_ts"),
          "buckets": ("buckets", "sqlite_autoindex_buckets_1", "ix_buckets_model_start")}


def sqlite_sizes(db: str) -> dict[str, int]:
    """Bytes of each join/bucket table with its indexes (dbstat pages)."""
    conn = sqlite3.connect(db)
    pages = dict(conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall())
    conn.close()
    return {t: sum(pages.get(n, 0) for n in names) for t, names in TABLES.items()}


def pg_sizes(store: Store) -> dict[str, int]:
    with store.read() as conn:
        return {t: int(conn.execute(text(f"SELECT pg_total_relation_size('{t}')")).scalar_one()) for t in TABLES}


def rows(store: Store) -> dict[str, int]:
    with store.read() as conn:
        return {t: int(conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one()) for t in TABLES}


def measure(url: str, path: str, n_events: int) -> tuple[dict[str, int], dict[str, int], tuple[float, float], Store]:
    store = Store(url)
    store.migrate()
    if url.startswith("postgresql"):
        with store.write() as conn:
            conn.execute(text("TRUNCATE predictions, outcomes, buckets, counters, positions, meta, dead_letters, "
                              "admitted_labels"))
    t, cpu = time.perf_counter(), time.process_time()
    replay(Pipeline(Config(), store), path)
    rate = (n_events / (time.perf_counter() - t), n_events / (time.process_time() - cpu))
    counts = rows(store)
    if url.startswith("postgresql"):
        with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("VACUUM ANALYZE"))
        sizes = pg_sizes(store)
    else:
        sizes = sqlite_sizes(url.split("///", 1)[1])
    return counts, sizes, rate, store


def report(name: str, counts: dict[str, int], sizes: dict[str, int], rates: tuple[float, float], days: float
           ) -> None:
    per = {t: sizes[t] / max(counts[t], 1) for t in TABLES}
    buckets_per_day = counts["buckets"] / days
    outcome_share = counts["outcomes"] / max(counts["predictions"], 1)
    print(f"== {name} (measured: {counts['predictions']:,} predictions over {days:g} days, nothing expired yet)")
    for t in TABLES:
        print(f"  {t:<12} {counts[t]:>9,} rows  {sizes[t] / 1e6:8.1f} MB  {per[t]:7.0f} bytes/row (with indexes)")
    rate, cpu_rate = rates
    print(f"  replay rate  {rate:,.0f} events/s of wall time in one process, {cpu_rate:,.0f} events per CPU second "
          "of the process")
    print(f"== {name} extrapolated to a {HORIZON_DAYS}-day label horizon (join rows kept until expiry; "
          f"{outcome_share:.2f} outcomes per prediction; {buckets_per_day:.0f} buckets/day as measured)")
    for per_day in (1_000_000, 100_000_000):
        join = per_day * HORIZON_DAYS * (per["predictions"] + outcome_share * per["outcomes"])
        bucket = buckets_per_day * HORIZON_DAYS * per["buckets"]  # hourly per model/version/variant: flat in volume
        events_s = per_day * (1 + outcome_share) / 86400
        print(f"  {per_day:>11,} predictions/day: join store {join / 1e9:8.1f} GB, buckets {bucket / 1e6:6.1f} MB "
              f"per {HORIZON_DAYS} days, write rate {events_s:,.0f} events/s = {events_s / rate:.3f} of one process's "
              "wall-time rate")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pg", default=None)
    ap.add_argument("--days", type=float, default=28)
    args, _ = ap.parse_known_args()
    work, path = simulated_stream(1800)
    with open(path, "rb") as fh:
        n = sum(1 for _ in fh)
    days = args.days
    db = os.path.join(work, "capacity.db")
    if os.path.exists(db):
        os.remove(db)
    counts, sizes, rate, store = measure(f"sqlite:///{db}", path, n)
    store.close()
    report("SQLite", counts, sizes, rate, days)
    if args.pg:
        counts, sizes, rate, store = measure(args.pg, path, n)
        store.close()
        report("PostgreSQL", counts, sizes, rate, days)


if __name__ == "__main__":
    main()
