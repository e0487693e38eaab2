"""Replay throughput against msgspec's raw decode rate, metrics latency, and peak memory.

Usage: python benchmarks/replay_bench.py [--per-day N] [--days D] [--workdir DIR] [--pg URL [--repeat K]]
                                        [--no-progress]
Prints rates as ratios against a baseline measured in the same run (raw msgspec decode of the file). With --pg (a
libpq URL of a maintenance database, e.g. postgresql://postgres@127.0.0.1:5432/test) it measures only `replay` into
PostgreSQL instead, K times, each into a fresh database (created and dropped) with the decode baseline taken just
before it, and prints the median ratio. --no-progress leaves out the six replays with and without the progress bar
(at ~5 M events they take half an hour; the replay, its peak RSS and the metrics latency are what issue 18 bounds).
The peak RSS of `driftline replay` itself is measured on a child process replaying the same file.
"""

from __future__ import annotations

import os
import resource
import statistics
import time

from driftline.config import Config
from driftline.ingest.pipeline import Pipeline
from driftline.ingest.replay import replay
from driftline.storage.store import Store

from bench_common import decode_rate, scratch_pg_database, simulated_stream


def metrics_latency(store: Store, config: Config, repeats: int = 20) -> float:
    from driftline.readouts.metrics import MetricsQuery, metrics_document  # scipy: imported after the replay's peak

    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        metrics_document(store, config, MetricsQuery("fraud", 7 * 86400))
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def progress_rate(path: str, db: str, n: int, shown: bool = True) -> float:
    """Events per second of `driftline replay` as on a terminal (`shown`: small first batches, ticks inside each
    batch, the bar drawn to a console in memory) or not (20,000-event batches), into a fresh database."""
    import io

    from rich.console import Console

    from driftline.commands.progress import IngestProgress, Ramp

    if os.path.exists(db):
        os.remove(db)
    store = Store(f"sqlite:///{db}")
    store.migrate()
    pipeline = Pipeline(Config(), store)
    t = time.perf_counter()
    if not shown:
        replay(pipeline, path, batch_size=20000)
        elapsed = time.perf_counter() - t
        store.close()
        return n / elapsed
    with IngestProgress(Console(file=io.StringIO(), force_terminal=True, width=120), "replay",
                        os.path.getsize(path), time.monotonic) as bar:
        def on_batch(res, pos):  # type: ignore[no-untyped-def]
            bar.add(res)
            bar.update(pos)
        replay(pipeline, path, on_batch, Ramp(20000).next_size, tick=bar.tick)
    elapsed = time.perf_counter() - t
    store.close()
    return n / elapsed


def cli_replay_rss(path: str, db: str) -> tuple[float, float]:
    """Peak RSS (MB) and wall seconds of `driftline replay` itself, a child process replaying into a fresh SQLite
    database: the CLI sets what this process does not (its collector thresholds, the malloc arena cap, the key log
    of the predictions it stored), and its peak is what issue 18 bounds (300 MB after 5 M events)."""
    import subprocess
    import sys

    if os.path.exists(db):
        os.remove(db)
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "driftline.cli", "--db", f"sqlite:///{db}", "replay", path],
                            stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"driftline replay exited {proc.returncode}")
    return usage.ru_maxrss / 1024, time.perf_counter() - t


def pg_ratios(path: str, n: int, admin: str, repeat: int) -> None:
    """`replay` into a fresh PostgreSQL database per run: events/s as a ratio of raw decode measured just before."""
    ratios = []
    for i in range(repeat):
        _, raw_rate = decode_rate(path)
        with scratch_pg_database(admin, "driftline_replaybench") as url:
            store = Store(url)
            store.migrate()
            t = time.perf_counter()
            replay(Pipeline(Config(), store), path, batch_size=20000)
            rate = n / (time.perf_counter() - t)
            store.close()
        ratios.append(rate / raw_rate)
        print(f"replay into PostgreSQL {rate:,.0f} events/s  ratio {rate / raw_rate:.4f} of raw decode "
              f"({raw_rate:,.0f} events/s just before)", flush=True)
    print(f"PostgreSQL: median ratio {statistics.median(ratios):.4f} over {repeat} run(s)")


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--pg", default=None)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-progress", action="store_true")
    args, _ = ap.parse_known_args()
    work, path = simulated_stream(20_000)
    with open(path, "rb") as fh:
        n = sum(1 for _ in fh)
    size_mb = os.path.getsize(path) / 1e6
    if args.pg:
        print(f"events                 {n:,} ({size_mb:.0f} MB of JSON lines)")
        pg_ratios(path, n, args.pg, args.repeat)
        return
    _, raw_rate = decode_rate(path)
    db = os.path.join(work, "bench.db")
    if os.path.exists(db):
        os.remove(db)
    store = Store(f"sqlite:///{db}")
    store.migrate()
    config = Config()
    pipeline = Pipeline(config, store)
    t = time.perf_counter()
    replay(pipeline, path, batch_size=20000)
    replay_s = time.perf_counter() - t
    rate = n / replay_s
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    # alternating runs, best of three each: the machine's load drifts between runs
    runs = [] if args.no_progress else [progress_rate(path, os.path.join(work, f"bench-{k}{i}.db"), n,
                                                      shown=k == "bar") for i in range(3) for k in ("bar", "plain")]
    latency = metrics_latency(store, config)
    cli_rss, cli_s = cli_replay_rss(path, os.path.join(work, "bench-cli.db"))
    rss_all_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"events                 {n:,} ({size_mb:.0f} MB of JSON lines)")
    print(f"raw msgspec decode     {raw_rate:,.0f} events/s (baseline)")
    print(f"replay into SQLite     {rate:,.0f} events/s  ratio {rate / raw_rate:.3f} of raw decode")
    if runs:
        paced_rate, plain_rate = max(runs[0::2]), max(runs[1::2])
        print(f"replay with progress   {paced_rate:,.0f} events/s  ratio {paced_rate / plain_rate:.3f} of replay "
              "without (first batches 1,000, 4,000, 16,000, then 20,000; ticks inside each batch; bar drawn to a "
              "console in memory)")
    print(f"metrics 7d window      {latency:.1f} ms (median of 20)")
    print(f"peak RSS               {rss_mb:.0f} MB after the replay in this process (see the CLI line below), "
          f"{rss_all_mb:.0f} MB after the metrics queries in the same process (scipy loaded)")
    print(f"driftline replay       peak RSS {cli_rss:.0f} MB (the CLI, a child process), {n / cli_s:,.0f} events/s "
          f"ratio {n / cli_s / raw_rate:.3f} of raw decode")
    print(f"database size          {os.path.getsize(db) / 1e6:.0f} MB")


if __name__ == "__main__":
    main()
