"""Cost of the write lock: ingest rate of one `driftline replay` vs two at once (each half of the same events).

Usage: python benchmarks/writers_bench.py [--per-day N] [--days D] [--pg postgresql://postgres@127.0.0.1/DB]
Prints events/s of one writer and of two concurrent writers (split by crc32(prediction_id)) on SQLite (and on
PostgreSQL with --pg; the database is emptied first), and the ratio two/one measured in the same run: with
write transactions serialised the ratio shows what concurrency still gains (decoding and reading the file
overlap) or costs (lock hand-over).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import zlib
from bench_common import scratch_dir  # noqa: E402


def cli(url: str, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "driftline.cli", "--db", url, *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def timed(url: str, paths: list[str]) -> float:
    """Seconds for replaying `paths` at once (one process each) into a migrated database."""
    # an empty replay migrates it (a read-only command refuses a SQLite file that does not exist)
    subprocess.run([sys.executable, "-m", "driftline.cli", "--db", url, "replay", "-"], input=b"", check=True,
                   stdout=subprocess.DEVNULL)
    t = time.perf_counter()
    procs = [cli(url, "replay", p) for p in paths]
    for p in procs:
        _, err = p.communicate()
        if p.returncode:
            raise SystemExit(err.decode())
    return time.perf_counter() - t


def reset_pg(url: str) -> None:
    from sqlalchemy import create_engine, text

    engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    with engine.begin() as conn:
        conn.execute(text("DROP SCHEMA public CASCADE; CREATE SCHEMA public"))
    engine.dispose()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-day", type=int, default=4000)
    ap.add_argument("--days", type=float, default=14)
    ap.add_argument("--pg", help="an empty PostgreSQL database to use (it is wiped)")
    args = ap.parse_args()
    work = scratch_dir("writers-bench-")
    events = os.path.join(work, "events.jsonl")
    subprocess.run([sys.executable, "-m", "driftline.cli", "simulate", "--days", str(args.days), "--per-day",
                    str(args.per_day), "--end", "2026-11-30T00:00:00Z", "--out", events], check=True)
    lines = open(events, "rb").read().splitlines(keepends=True)
    halves: list[list[bytes]] = [[], []]
    for ln in lines:
        halves[zlib.crc32(json.loads(ln)["prediction_id"].encode()) % 2].append(ln)
    parts = []
    for i, half in enumerate(halves):
        parts.append(os.path.join(work, f"half-{i}.jsonl"))
        with open(parts[-1], "wb") as fh:
            fh.write(b"".join(half))
    n = len(lines)
    print(f"{n:,} events ({args.days:g} days x {args.per_day:,}/day)")
    backends = [("sqlite", lambda tag: f"sqlite:///{os.path.join(work, tag + '.db')}", lambda _u: None)]
    if args.pg:
        backends.append(("postgresql", lambda _tag: args.pg, reset_pg))
    for name, url_of, reset in backends:
        url = url_of("one")
        reset(url)
        one = timed(url, [events])
        url = url_of("two")
        reset(url)
        two = timed(url, parts)
        print(f"{name:10s} one writer {n / one:9,.0f} ev/s   two writers {n / two:9,.0f} ev/s   "
              f"ratio two/one {one / two:.2f}")


if __name__ == "__main__":
    main()
