"""Replay throughput against msgspec's raw decode rate, metrics latency, and peak memory.

Usage: python benchmarks/replay_bench.py [--per-day N] [--days D] [--workdir DIR]
Prints rates as ratios against a baseline measured in the same run (raw msgspec decode of the file).
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

from bench_common import decode_rate, simulated_stream


def metrics_latency(store: Store, config: Config, repeats: int = 20) -> float:
    from driftline.readouts.metrics import MetricsQuery, metrics_document  # scipy: imported after the replay's peak

    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        metrics_document(store, config, MetricsQuery("fraud", 7 * 86400))
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def main() -> None:
    work, path = simulated_stream(20_000)
    with open(path, "rb") as fh:
        n = sum(1 for _ in fh)
    size_mb = os.path.getsize(path) / 1e6
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
    latency = metrics_latency(store, config)
    rss_all_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"events                 {n:,} ({size_mb:.0f} MB of JSON lines)")
    print(f"raw msgspec decode     {raw_rate:,.0f} events/s (baseline)")
    print(f"replay into SQLite     {rate:,.0f} events/s  ratio {rate / raw_rate:.3f} of raw decode")
    print(f"metrics 7d window      {latency:.1f} ms (median of 20)")
    print(f"peak RSS               {rss_mb:.0f} MB after the replay (what `driftline replay` holds), "
          f"{rss_all_mb:.0f} MB after the metrics queries in the same process (scipy loaded)")
    print(f"database size          {os.path.getsize(db) / 1e6:.0f} MB")


if __name__ == "__main__":
    main()
