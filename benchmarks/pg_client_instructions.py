"""The client side of a `replay` into PostgreSQL in CPU instructions (callgrind, only inside the replay call: imports,
the schema and the database's creation left out), so two commits' storage code can be compared on a loaded machine
where CPU seconds are noise. The server's work is not counted (pg_stages_bench / pg_statements_bench measure it).

Usage: python benchmarks/pg_client_instructions.py [--pg URL] [--batch N] [--days D] [--per-day N]
(--pg: a libpq URL of a maintenance database; a fresh database is created and dropped.) Run it with PYTHONPATH
pointing at each commit's src/. Needs valgrind.
"""

from __future__ import annotations

import argparse
import operator
import os
import shutil
import sys

from driftline.ingest.replay import BATCH


def child(admin: str, batch: int, path: str) -> None:
    """Replay `path` into a fresh database, the replay alone inside operator.call (what callgrind collects)."""
    from bench_common import scratch_pg_database
    from driftline.config import Config
    from driftline.ingest.pipeline import Pipeline
    from driftline.ingest.replay import replay
    from driftline.storage.store import Store

    with scratch_pg_database(admin, "driftline_pginstr") as url:
        store = Store(url)
        store.migrate()
        pipeline = Pipeline(Config(), store)
        operator.call(replay, pipeline, path, batch_size=batch)
        store.close()


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], int(sys.argv[3]), sys.argv[4])
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--pg", default=os.environ.get("DRIFTLINE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test"))
    ap.add_argument("--batch", type=int, default=BATCH)  # what `driftline replay` uses
    args, _ = ap.parse_known_args()
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (apt-get install valgrind)")
    from bench_common import callgrind_instructions, count_lines, simulated_stream

    _, path = simulated_stream(1800)  # --days/--per-day (default 28 days: shorten it, callgrind is ~50x slower)
    n = count_lines(path)
    instructions = callgrind_instructions([sys.executable, __file__, "--child", args.pg, str(args.batch), path])
    batches = -(-n // args.batch)
    print(f"{n:,} events in {batches} batches of {args.batch:,}: client {instructions / n:,.0f} instructions/event, "
          f"{instructions / batches / 1e6:,.1f} M/batch")


if __name__ == "__main__":
    main()
