"""Set-up shared by the benchmarks: the best-of-N timing loop (wall or CPU clock), raw msgspec decode (the
baseline), the simulated stream, instruction counts under valgrind."""

from __future__ import annotations

import argparse
import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

import msgspec


def best_seconds(work: Callable[[], object], repeats: int = 3, clock: Callable[[], float] = time.perf_counter) -> float:
    """Seconds of the fastest of a few runs of `work`, read on `clock` (wall time by default; time.process_time
    for CPU seconds of this process): the machine's noise and cold caches only ever slow a run."""
    best = float("inf")
    for _ in range(repeats):
        t = clock()
        work()
        best = min(best, clock() - t)
    return best


def best_rate(n: int, work: Callable[[], object], repeats: int = 3) -> float:
    """Events per second of the best of a few runs (wall time)."""
    return n / best_seconds(work, repeats)


def raw_decode(lines: Iterable[bytes], dec: msgspec.json.Decoder) -> None:
    """Decode every line with msgspec into plain objects, keeping nothing: the baseline the benches' rates are
    ratios of."""
    for line in lines:
        dec.decode(line)


def count_lines(path: str) -> int:
    """Lines (events) in the file."""
    with open(path, "rb") as fh:
        return sum(1 for _ in fh)


def decode_seconds(path: str, clock: Callable[[], float] = time.perf_counter) -> float:
    """Raw msgspec decode of every line of the file (read line by line), seconds of the best of three on `clock`."""
    dec = msgspec.json.Decoder()

    def decode_all() -> None:
        with open(path, "rb") as fh:
            raw_decode(fh, dec)
    return best_seconds(decode_all, clock=clock)


@contextmanager
def scratch_pg_database(admin: str, prefix: str) -> Iterator[str]:
    """A fresh PostgreSQL database named `prefix`_<hex> next to `admin`'s (a URL of the server): its URL, dropped
    at exit (WITH FORCE: a benchmark's connection left open does not keep it)."""
    import uuid

    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{admin.rsplit('/', 1)[0]}/{name}"
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def scratch_dir(prefix: str) -> str:
    """A fresh temporary directory removed when the benchmark exits (broker logs, databases and event files of a run
    are hundreds of MB at the larger sizes; the benchmarks used to leave them in /tmp)."""
    work = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, work, True)
    return work


def decode_rate(path: str) -> tuple[int, float]:
    """Raw msgspec decode of every line of the file (read line by line), events per second (best of three)."""
    n = count_lines(path)
    return n, n / decode_seconds(path)


def simulated_stream(per_day: int) -> tuple[str, str]:
    """Parse --per-day/--days/--workdir and write the simulated stream there: (work dir, events file). The
    simulator runs in a child process so its memory does not count in this process's peak RSS."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-day", type=int, default=per_day)
    ap.add_argument("--days", type=float, default=28)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--end", default=None,
                    help="end of the simulated span (RFC 3339); fix it to replay the same stream on every run")
    args, _ = ap.parse_known_args()  # a bench may add options of its own
    work = args.workdir or scratch_dir("driftline-bench-")
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, "events.jsonl")
    end = ["--end", args.end] if args.end else []
    subprocess.run([sys.executable, "-m", "driftline.cli", "simulate", "--days", str(args.days), "--per-day",
                    str(args.per_day), "--out", path, *end], check=True, stdout=subprocess.DEVNULL)
    return work, path


def time_into(spent: dict[str, float], owner: object, name: str, stage: str) -> None:
    """Wrap owner.name so the CPU seconds of every call add to spent[stage] (a name the code under test lacks is
    skipped, so a bench can run against an older commit's src/)."""
    inner = getattr(owner, name, None)
    if inner is None:
        return

    def wrapper(*args: object, **kwargs: object) -> object:
        t = time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[stage] += time.process_time() - t

    setattr(owner, name, wrapper)


def valgrind_instructions(argv: list[str]) -> int:
    """Instructions valgrind counts for one run of `argv` (PYTHONHASHSEED fixed: the same count every run)."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    out = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                          *argv], env=env, capture_output=True, text=True, check=True).stderr
    match = re.search(r"I\s+refs:\s+([\d,]+)", out)
    if match is None:
        raise RuntimeError(f"no instruction count in valgrind's output:\n{out[-2000:]}")
    return int(match.group(1).replace(",", ""))


def callgrind_instructions(argv: list[str]) -> int:
    """Instructions callgrind collects inside `operator.call` during one run of `argv` (PYTHONHASHSEED fixed): the
    instruction benchmarks wrap only the call they measure in operator.call."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    out = subprocess.run(["valgrind", "--tool=callgrind", "--collect-atstart=no", "--toggle-collect=_operator_call",
                          "--callgrind-out-file=/dev/null", *argv], env=env, capture_output=True, text=True,
                         check=True).stderr
    match = re.search(r"Collected\s*:\s*(\d+)", out)
    if match is None:
        raise RuntimeError(f"no instruction count in callgrind's output:\n{out[-2000:]}")
    return int(match.group(1))


def valgrind_child_args(days: float = 1, per_day: int = 8000) -> tuple[argparse.Namespace, list[str]]:
    """--days/--per-day of an instruction benchmark (exits when valgrind is missing) and the child's argv tail
    (the benchmark re-runs itself under valgrind as `__file__ --child MODE DAYS PER_DAY`)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--days", type=float, default=days)
    ap.add_argument("--per-day", type=int, default=per_day)
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (apt-get install valgrind)")
    return args, [str(args.days), str(args.per_day)]
