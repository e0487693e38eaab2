"""What a CLI command costs before it does anything (issue 17): CPU of a fresh `driftline` process as a ratio of
`python -c "import sqlalchemy"` measured in the same run.

Usage: python benchmarks/cli_bench.py [--db URL] [--days D] [--per-day N] [--repeats R]
Without --db it simulates D days (default 28, N predictions a day, default 5000: the demo's size) into a
temporary SQLite database through the CLI. For each command it prints the best CPU time (user + system, of the
child process) of R runs and its ratio to the baseline; for `metrics --json` also the same command's wall time
in a warm process (modules already imported: what the query itself costs). Run it against other code with
PYTHONPATH=/path/to/src (the child processes inherit it).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

from driftline.cli import main as driftline_main

from bench_common import best_seconds

BASELINE = ["-c", "import sqlalchemy"]


def cpu_of(args: list[str], repeats: int) -> float:
    """Best CPU seconds (user + system) of `python args` over `repeats` fresh processes."""
    best = float("inf")
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        best = min(best, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    return best


def cli(*argv: str) -> list[str]:
    """Arguments running `driftline argv` in a fresh interpreter (exit code checked by cpu_of)."""
    return ["-c", "import sys; from driftline.cli import main; sys.exit(main(sys.argv[1:]))", *argv]


def warm_wall(argv: list[str], repeats: int) -> float:
    """Best wall seconds of `driftline argv` in this process once everything it needs is imported."""
    def run() -> None:
        assert driftline_main(argv) == 0

    with contextlib.redirect_stdout(io.StringIO()):
        driftline_main(argv)  # imports and first-open costs paid here
        return best_seconds(run, repeats)


def build_db(tmp: Path, days: float, per_day: int) -> str:
    """A SQLite database holding `days` simulated days, replayed through the CLI."""
    url = f"sqlite:///{tmp / 'bench.db'}"
    events = tmp / "events.jsonl"
    subprocess.run([sys.executable, *cli("--db", url, "simulate", "--days", str(days), "--per-day", str(per_day),
                                         "--end", "2026-11-30T00:00:00Z", "--out", str(events))], check=True)
    subprocess.run([sys.executable, *cli("--db", url, "replay", str(events))], check=True,
                   stdout=subprocess.DEVNULL)
    return url


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", help="database URL to query (default: a simulated one in a temporary directory)")
    ap.add_argument("--days", type=float, default=28.0)
    ap.add_argument("--per-day", type=int, default=5000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = args.db or build_db(Path(tmp), args.days, args.per_day)
        base = cpu_of(BASELINE, args.repeats)
        bare = cpu_of(["-c", "pass"], args.repeats)
        print(f"baseline `python -c \"import sqlalchemy\"`: {base * 1000:.0f} ms CPU "
              f"(`python -c pass`: {bare * 1000:.0f} ms, ratio {bare / base:.2f})")
        cases = {
            "--version": ["--version"],
            "--help": ["--help"],
            "metrics --json": ["--db", url, "metrics", "--json"],
            "alerts --json": ["--db", url, "alerts", "--json"],
            "ab --json": ["--db", url, "ab", "--json"],
        }
        for name, argv in cases.items():
            cost = cpu_of(cli(*argv), args.repeats)
            print(f"{name:>16}: {cost * 1000:6.0f} ms CPU, ratio {cost / base:5.2f} to the baseline")
        query = warm_wall(["--db", url, "metrics", "--json"], args.repeats)
        print(f"metrics --json in a warm process (the query itself): {query * 1000:.0f} ms wall, "
              f"ratio {query / base:.2f} to the baseline")


if __name__ == "__main__":
    main()
