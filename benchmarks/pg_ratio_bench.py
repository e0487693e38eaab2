"""Issue 18's ratio for a `replay` into PostgreSQL: events per CPU second of driftline's process ÷ msgspec's raw
decode per CPU second of the same file, and the wall-time rate with the server's CPU beside it (the server runs on
the same cores, so the wall-time rate pays for both). The replay runs at replay.BATCH events a transaction (what
`driftline replay` uses) into a fresh database; the server's CPU is its backends' utime+stime from /proc, so the
server must run on this host.

Usage: python benchmarks/pg_ratio_bench.py --file EVENTS [--pg URL] [--batch N]
(--pg: a libpq URL of a maintenance database; the fresh database is created and dropped.) To compare two commits,
run it alternately with PYTHONPATH pointing at each one's src/.
"""

from __future__ import annotations

import argparse
import os
import time

from sqlalchemy import event

from driftline.config import Config
from driftline.gc_tuning import tune_for_batches
from driftline.ingest.pipeline import Pipeline
from driftline.ingest.replay import BATCH, replay
from driftline.storage.store import Store

from bench_common import count_lines, decode_seconds, scratch_pg_database


def backends_cpu(pids: set[int]) -> float:
    """CPU seconds the backends `pids` have used so far (those gone are dropped from the set)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in list(pids):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            pids.discard(pid)
            continue
        total += int(fields[11]) + int(fields[12])
    return total / tick


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--file", required=True)
    ap.add_argument("--pg", default=os.environ.get("DRIFTLINE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test"))
    ap.add_argument("--batch", type=int, default=BATCH)
    args = ap.parse_args()
    n = count_lines(args.file)
    raw_cpu = decode_seconds(args.file, clock=time.process_time)
    raw_wall = decode_seconds(args.file)
    backends: set[int] = set()
    with scratch_pg_database(args.pg, "driftline_pgratio") as url:
        store = Store(url)
        event.listen(store.engine, "connect", lambda dbapi, _rec: backends.add(dbapi.info.backend_pid))
        store.migrate()
        tune_for_batches()  # as the CLI does
        wall, cpu, server = time.perf_counter(), time.process_time(), backends_cpu(backends)
        replay(Pipeline(Config(), store), args.file, batch_size=args.batch)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        server = backends_cpu(backends) - server
        store.close()
    print(f"{n:,} events, batches of {args.batch:,}: driftline CPU {cpu:.2f} s, server CPU {server:.2f} s, wall "
          f"{wall:.2f} s; raw decode {raw_cpu:.3f} CPU s, {raw_wall:.3f} s wall")
    print(f"ratio by driftline's CPU {(n / cpu) / (n / raw_cpu):.4f}; by driftline + server CPU "
          f"{raw_cpu / (cpu + server):.4f}; by wall time {raw_wall / wall:.4f} ({n / wall:,.0f} events/s)")


if __name__ == "__main__":
    main()
