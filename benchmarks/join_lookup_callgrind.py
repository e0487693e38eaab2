"""Instructions of one replay batch's join lookup (Store.load_join on SQLite), counted by callgrind inside the
lookup only, on a store holding the rest of the stream (issue 18, lookups round).

The stream (`simulate --days D --per-day N --end 2026-11-30T00:00:00Z`) is replayed but for its last --tail lines
into a fresh SQLite file; the tail's prediction ids (repeats kept, as the pipeline passes them) are then looked up
--repeat times in write transactions that are rolled back, each lookup called through operator.call (the toggle).
Compare commits from checkouts at paths of the same length, as replay_callgrind.py; a --workdir given again reuses
its store (the same for every commit whose results are identical).

Usage: python benchmarks/join_lookup_callgrind.py [--per-day N] [--days D] [--tail T] [--repeat R] [--workdir DIR]
Needs valgrind (apt-get install valgrind).
"""

from __future__ import annotations

import argparse
import json
import operator
import os
import shutil
import subprocess
import sys

from bench_common import callgrind_instructions, scratch_dir

END = "2026-11-30T00:00:00Z"


class _Rollback(Exception):
    """Leaves the write transaction without committing."""


def _child(db: str, tail: str, repeat: int) -> None:
    """What runs under callgrind: `repeat` lookups of the tail's ids, each through operator.call (the toggle)."""
    from driftline.storage.store import Store

    with open(tail, "rb") as fh:
        ids = [json.loads(line)["prediction_id"] for line in fh]
    store = Store(f"sqlite:///{db}")
    for _ in range(repeat + 1):  # the first one warms the page cache and the statement cache, uncounted
        try:
            with store.write() as conn:
                if _ == 0:
                    store.load_join(conn, ids)
                else:
                    operator.call(store.load_join, conn, ids)
                raise _Rollback
        except _Rollback:
            pass
    store.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-day", type=int, default=20000)
    ap.add_argument("--days", type=float, default=28)
    ap.add_argument("--tail", type=int, default=30000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", default=None)
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (apt-get install valgrind)")
    work = args.workdir or scratch_dir("driftline-lookup-cg-")
    os.makedirs(work, exist_ok=True)
    events, head, tail, db = (os.path.join(work, n) for n in ("events.jsonl", "head.jsonl", "tail.jsonl", "l.db"))
    cli = [sys.executable, "-m", "driftline.cli"]
    if not (os.path.exists(db) and os.path.exists(tail)):  # a --workdir of an earlier run: its store is reused
        subprocess.run([*cli, "simulate", "--days", str(args.days), "--per-day", str(args.per_day), "--end", END,
                        "--out", events], check=True, stdout=subprocess.DEVNULL)
        with open(events, "rb") as fh:
            lines = fh.readlines()
        with open(head, "wb") as fh:
            fh.writelines(lines[:-args.tail])
        with open(tail, "wb") as fh:
            fh.writelines(lines[-args.tail:])
        subprocess.run([*cli, "--db", f"sqlite:///{db}", "replay", "--json", head], check=True,
                       stdout=subprocess.DEVNULL)
    with open(tail, "rb") as fh:
        ids = {json.loads(line)["prediction_id"] for line in fh}
    ir = callgrind_instructions([sys.executable, __file__, "--child", db, tail, str(args.repeat)])
    print(f"lookup of the stream's last {args.tail:,} events ({len(ids):,} distinct ids) on a store of the rest")
    print(f"join lookup                 {ir / args.repeat:,.0f} instructions a lookup, "
          f"{ir / args.repeat / len(ids):,.0f} an id")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        _child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        main()
