"""The join state's maintenance reads on a SQLite store: expiry's `before` (every stored prediction and outcome, each
read once as it passes the label horizon) and the implicit-negative pass's `unlabelled_before`, in CPU seconds, as a
ratio of the driver's own fetch of the same tables measured in the same run (the floor: rows as sqlite3 tuples).
No replay benchmark reaches these reads: a simulated month stays inside the 90-day horizon.

Usage: python benchmarks/maintenance_bench.py [--db sqlite:////path/store.db] [--per-day N] [--days D] [--repeats R]
Without --db it simulates D days (default 28) at N predictions a day (default 1,800) and replays them into a
temporary store. Nothing is written: the reads run in read transactions and claim nothing on SQLite.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import time

from driftline.storage.store import Store

from bench_common import scratch_dir

FAR = 2e10
"""A cutoff after every stored event: the reads return the whole join state."""


def build(work: str, per_day: int, days: float) -> str:
    """A SQLite store of the simulated stream, replayed by the CLI."""
    events, db = os.path.join(work, "events.jsonl"), os.path.join(work, "store.db")
    cli = [sys.executable, "-m", "driftline.cli"]
    subprocess.run([*cli, "simulate", "--days", str(days), "--per-day", str(per_day), "--out", events], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run([*cli, "--db", f"sqlite:///{db}", "replay", events], check=True, stdout=subprocess.DEVNULL)
    os.remove(events)
    return f"sqlite:///{db}"


def _cpu(fn: object, repeats: int) -> float:
    """Least CPU seconds of `repeats` calls (after one warm-up)."""
    fn()  # type: ignore[operator]
    best = float("inf")
    for _ in range(repeats):
        t = time.process_time()
        fn()  # type: ignore[operator]
        best = min(best, time.process_time() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", default=None)
    ap.add_argument("--per-day", type=int, default=1800)
    ap.add_argument("--days", type=float, default=28)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    url = args.db or build(scratch_dir("driftline-maintbench-"), args.per_day, args.days)
    if not url.startswith("sqlite:///"):
        sys.exit("a SQLite store (sqlite:///path) is measured here")
    store = Store(url)
    raw = sqlite3.connect(url[len("sqlite:///"):])
    counts: list[int] = []

    def floor() -> None:
        raw.execute("SELECT * FROM predictions").fetchall()
        raw.execute("SELECT * FROM outcomes").fetchall()

    def expiry() -> None:
        with store.read() as conn:
            preds, outs = store.join.before(conn, FAR, None, limit=10**9)
        counts[:] = [len(preds), len(outs)]

    def unlabelled() -> None:
        with store.read() as conn:
            store.join.unlabelled_before(conn, FAR, None, limit=10**9)

    base = _cpu(floor, args.repeats)
    exp = _cpu(expiry, args.repeats)
    unl = _cpu(unlabelled, args.repeats)
    print(f"join state: {counts[0]:,} predictions, {counts[1]:,} outcomes")
    print(f"driver fetch of both tables   {base:.3f} CPU s (baseline)")
    print(f"expiry read (before)          {exp:.3f} CPU s = {exp / base:.2f} x baseline")
    print(f"implicit-negative read        {unl:.3f} CPU s = {unl / base:.2f} x baseline")
    raw.close()
    store.close()


if __name__ == "__main__":
    main()
