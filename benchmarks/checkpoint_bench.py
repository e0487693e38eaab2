"""What SQLite's checkpoint size does to the bytes `replay` writes: SQLite's default (1,000 pages) against
driftline's (a checkpoint once the -wal holds storage.locking.WAL_SIZE_LIMIT), alternating, each run in a child
process replaying the same simulated stream into a fresh file. Prints bytes written and read/write calls from
/proc/self/io, CPU seconds, and driftline's figures as ratios of the default's in the same run.

Usage: python benchmarks/checkpoint_bench.py [--per-day N] [--days D] [--batch-size B] [--repeat K] [--workdir DIR]
(`--batch-size 300` gives a live stream's shape; the default is replay's). Linux only (/proc/self/io).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from bench_common import simulated_stream

CHILD = r"""
import json, os, sys, time
from sqlalchemy import event
from driftline.config import Config
from driftline.gc_tuning import tune_for_batches
from driftline.ingest.pipeline import Pipeline
from driftline.ingest.replay import replay
from driftline.storage.store import Store
path, db, batch, default = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "default"
tune_for_batches()
store = Store(f"sqlite:///{db}")
if default:  # runs after driftline's own connect hook: SQLite's default checkpoint size again
    event.listen(store.engine, "connect", lambda c, _r: c.execute("PRAGMA wal_autocheckpoint=1000"))
store.migrate()
cpu = time.process_time()
replay(Pipeline(Config(), store), path, batch_size=batch)
cpu = time.process_time() - cpu
io = dict(line.split(": ") for line in open("/proc/self/io").read().splitlines())
print(json.dumps({"cpu": cpu, "wchar": int(io["wchar"]), "syscw": int(io["syscw"]), "syscr": int(io["syscr"])}))
"""


def one(path: str, db: str, batch: int, setting: str) -> dict[str, float]:
    """One replay in a child process into a fresh file; its /proc/self/io counters and CPU seconds."""
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    out = subprocess.run([sys.executable, "-c", CHILD, path, db, str(batch), setting], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    """Alternate the two settings; print each run and the ratios."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch-size", type=int, default=30000)
    ap.add_argument("--repeat", type=int, default=2)
    args, _ = ap.parse_known_args()
    work, path = simulated_stream(8000)
    db = os.path.join(work, "ck.db")
    runs: dict[str, list[dict[str, float]]] = {"default": [], "driftline": []}
    for _ in range(args.repeat):
        for setting in runs:
            started = time.perf_counter()
            got = one(path, db, args.batch_size, setting)
            runs[setting].append(got)
            print(f"{setting:9s} written {got['wchar'] / 1e6:8.1f} MB  write calls {got['syscw']:>9,}  read calls "
                  f"{got['syscr']:>9,}  CPU {got['cpu']:6.2f} s  wall {time.perf_counter() - started:6.2f} s")
    base, new = runs["default"][-1], runs["driftline"][-1]
    print(f"driftline / default: bytes written {new['wchar'] / base['wchar']:.3f}, write calls "
          f"{new['syscw'] / base['syscw']:.3f}, read calls {new['syscr'] / base['syscr']:.3f}")


if __name__ == "__main__":
    main()
