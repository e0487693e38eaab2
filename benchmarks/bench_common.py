"""Set-up shared by the benchmarks: the best-of-N rate, raw msgspec decode of a file, the simulated stream."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

import msgspec


def best_rate(n: int, work: Callable[[], object], repeats: int = 3) -> float:
    """Events per second of the best of a few runs: the machine's noise and cold caches only ever slow a run."""
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - t)
    return n / best


def decode_rate(path: str) -> tuple[int, float]:
    """Raw msgspec decode of every line of the file (read line by line), events per second (best of three)."""
    dec = msgspec.json.Decoder()
    with open(path, "rb") as fh:
        n = sum(1 for _ in fh)

    def decode_all() -> None:
        with open(path, "rb") as fh:
            for line in fh:
                dec.decode(line)
    return n, best_rate(n, decode_all)


def simulated_stream(per_day: int) -> tuple[str, str]:
    """Parse --per-day/--days/--workdir and write the simulated stream there: (work dir, events file). The
    simulator runs in a child process so its memory does not count in this process's peak RSS."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-day", type=int, default=per_day)
    ap.add_argument("--days", type=float, default=28)
    ap.add_argument("--workdir", default=None)
    args, _ = ap.parse_known_args()  # a bench may add options of its own
    work = args.workdir or tempfile.mkdtemp(prefix="driftline-bench-")
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, "events.jsonl")
    subprocess.run([sys.executable, "-m", "driftline.cli", "simulate", "--days", str(args.days), "--per-day",
                    str(args.per_day), "--out", path], check=True, stdout=subprocess.DEVNULL)
    return work, path
