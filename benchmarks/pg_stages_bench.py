"""Where a `replay` into PostgreSQL spends its time per batch, stage by stage: wall time, this process's CPU and the
database server's CPU (its backends' utime+stime from /proc, so the server must run on this host), so the time
waiting on the server is told from the time computing and from the time neither ran (a loaded machine).

Usage: python benchmarks/pg_stages_bench.py [--pg URL] [--batch N] [--per-day N] [--days D] [--workdir DIR]
(--pg: a libpq URL of a maintenance database; a fresh database is created and dropped.) To compare two commits, run
it alternately with PYTHONPATH pointing at each one's src/ (stage hooks skip the functions a commit lacks).
"""

from __future__ import annotations

import argparse
import os
import time
from collections import Counter, defaultdict
from typing import Any

import psycopg
from sqlalchemy import event

import driftline.core.engine as engine
import driftline.ingest.pipeline as pipeline
import driftline.storage.bucket_writes as bucket_writes
import driftline.storage.bulk as bulk
import driftline.storage.pgcopy as pgcopy
import driftline.storage.store as store
from driftline.config import Config
from driftline.ingest.replay import BATCH, replay

from bench_common import count_lines, scratch_pg_database, simulated_stream

STAGES = [(psycopg.Connection, "commit", "COMMIT"), (pipeline, "decode_many", "decode"),
          (store.Store, "load_join", "join lookup"), (engine.Engine, "finish", "engine finish"),
          (pipeline, "apply_isolating", "engine incl. lookup+finish"), (pipeline, "record_samples", "feature samples"),
          (store.Store, "commit_batch", "commit_batch"), (bucket_writes, "merge_buckets", "  buckets"),
          (bucket_writes, "encode_merged", "    of which encode_merged"), (bulk, "write_predictions", "  join rows"),
          (bulk, "write_outcomes", "  outcome rows"), (pgcopy, "copy_rows", "  of which COPY"),
          (bulk, "copy_new_join_rows", "  new join rows (COPY, both tables)"),
          (bulk, "upsert_predictions", "  join rows upserted"), (bulk, "upsert_outcomes", "  outcome rows upserted")]


class Spent:
    """Wall, process CPU and server CPU seconds per stage, and calls."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = defaultdict(float)
        self.cpu: dict[str, float] = defaultdict(float)
        self.server: dict[str, float] = defaultdict(float)
        self.calls: Counter[str] = Counter()
        self.backends: set[int] = set()
        self.tick = os.sysconf("SC_CLK_TCK")

    def server_cpu(self) -> float:
        """CPU seconds the server's backends of this process have used so far."""
        total = 0
        for pid in list(self.backends):
            try:
                fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            except FileNotFoundError:
                self.backends.discard(pid)
                continue
            total += int(fields[11]) + int(fields[12])
        return total / self.tick

    def wrap(self, owner: Any, name: str, stage: str) -> None:
        inner = getattr(owner, name, None)
        if inner is None:
            return

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            t, c, s = time.perf_counter(), time.process_time(), self.server_cpu()
            try:
                return inner(*args, **kwargs)
            finally:
                self.wall[stage] += time.perf_counter() - t
                self.cpu[stage] += time.process_time() - c
                self.server[stage] += self.server_cpu() - s
                self.calls[stage] += 1

        setattr(owner, name, wrapper)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pg", default=os.environ.get("DRIFTLINE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test"))
    ap.add_argument("--batch", type=int, default=BATCH)  # what `driftline replay` uses
    args, _ = ap.parse_known_args()
    _, path = simulated_stream(1800)
    n = count_lines(path)
    spent = Spent()
    for owner, name, stage in STAGES:
        spent.wrap(owner, name, stage)
    with scratch_pg_database(args.pg, "driftline_pgstages") as url:
        st = store.Store(url)
        event.listen(st.engine, "connect", lambda dbapi, _rec: spent.backends.add(dbapi.info.backend_pid))
        st.migrate()
        t, c, s = time.perf_counter(), time.process_time(), spent.server_cpu()
        replay(pipeline.Pipeline(Config(), st), path, batch_size=args.batch)
        wall, cpu, server = time.perf_counter() - t, time.process_time() - c, spent.server_cpu() - s
        st.close()
    batches = -(-n // args.batch)
    per = 1000 / batches
    print(f"{n:,} events in {batches} batches of {args.batch:,}: {n / wall:,.0f} events/s; per batch wall "
          f"{wall * per:.1f} ms, CPU {cpu * per:.1f} ms, server CPU {server * per:.1f} ms")
    for stage in spent.wall:
        print(f"  {stage:<28} wall {spent.wall[stage] * per:7.1f}  CPU {spent.cpu[stage] * per:7.1f}  "
              f"server CPU {spent.server[stage] * per:6.1f}  ms/batch  ({spent.calls[stage]} calls)")


if __name__ == "__main__":
    main()
