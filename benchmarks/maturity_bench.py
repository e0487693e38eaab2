"""What the label-maturity hint costs (issue 17 part 2): `metrics --json` on a window without matured labels (the
hint reads the model's whole stored label-delay histogram) as a ratio of `metrics --json --at` a matured window
(no hint), both in one warm process, measured in the same run.

Usage: python benchmarks/maturity_bench.py --db URL [--model M] [--repeats R]
The database should hold a model with month-long label delays (e.g. tests/churn_sim.py's stream, replayed).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json

from driftline.cli import main

from bench_common import best_seconds


def best(args: list[str], repeats: int) -> float:
    """Best wall seconds of `driftline ARGS` in this process over `repeats` runs (output discarded)."""
    def once() -> None:
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(args) == 0
    return best_seconds(once, repeats)


def run() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--db", required=True)
    ap.add_argument("--model")
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    base = ["--db", a.db, "metrics", "--json", *(["--model", a.model] if a.model else [])]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(base)
    hint = json.loads(out.getvalue())["label_maturity"]
    if hint is None or hint["matured_at"] is None:
        raise SystemExit("the newest window has matured labels (or none has): nothing to compare")
    with_hint = best(base, a.repeats)
    matured = best([*base, "--at", hint["matured_at"]], a.repeats)
    print(f"metrics --json, newest window (hint, {hint['delay_labels']:,} labels in the histogram): "
          f"{with_hint * 1e3:.1f} ms")
    print(f"metrics --json --at {hint['matured_at']} (matured, no hint): {matured * 1e3:.1f} ms")
    print(f"ratio hint / no hint: {with_hint / matured:.2f}")


if __name__ == "__main__":
    run()
