"""The 7-day `metrics` query's instructions (callgrind) on a given store: exact where metrics_bench.py's CPU times
move with the machine's load, so two commits can be told apart on the same database.

The child opens the store, runs the query once outside the count (imports, the first statement's compilation,
numpy's first calls), then `--repeats` times inside `operator.call`, valgrind's toggle; the figure is per query.
Kernel time (page faults of fresh numpy arrays, SQLite's file reads) is not counted: metrics_bench.py has it.
Compare commits from checkouts at paths of the same length, on copies of one database (a store at one schema).

Usage: python benchmarks/metrics_callgrind.py --db sqlite:////path/store.db [--model fraud] [--window-days 7]
                                              [--repeats 3]
Build a large store first, e.g. `driftline simulate --days 28 --per-day 92000 --out e.jsonl` (~4.9 M events) and
`driftline --db sqlite:////tmp/big.db replay e.jsonl`. Needs valgrind (apt-get install valgrind).
"""

from __future__ import annotations

import argparse
import operator
import shutil
import sys

from bench_common import callgrind_instructions


def _child(url: str, model: str, window_s: float, repeats: int) -> None:
    """What runs under callgrind: one query outside the count, then `repeats` inside it."""
    from driftline.config import Config
    from driftline.readouts.metrics import MetricsQuery, metrics_document
    from driftline.storage.store import Store

    store, config, q = Store(url), Config(), MetricsQuery(model, window_s)
    metrics_document(store, config, q)

    def queries() -> None:
        for _ in range(repeats):
            metrics_document(store, config, q)

    operator.call(queries)
    store.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", required=True, help="database URL of an existing store")
    ap.add_argument("--model", default="fraud")
    ap.add_argument("--window-days", type=float, default=7)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (apt-get install valgrind)")
    ir = callgrind_instructions([sys.executable, __file__, "--child", args.db, args.model,
                                 str(args.window_days * 86400), str(args.repeats)])
    print(f"{args.window_days:g}-day metrics query     {ir / args.repeats / 1e6:,.2f} M instructions per query "
          f"(mean of {args.repeats}, inside the query calls only)")


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--child":
        _child(sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5]))
    else:
        main()
