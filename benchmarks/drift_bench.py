"""Drift over 20 features for a 7-day window: latency at two traffic volumes (flat in event count).

Usage: python benchmarks/drift_bench.py [--small 500] [--large 10000]
Builds two SQLite databases with 21 days of 20-feature traffic (12 numeric, 8 categorical), sets the reference
from the first 14 days and times `drift_document` for the last 7 days. Prints each latency and their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import time

import msgspec
import numpy as np

from driftline.config import from_dict
from driftline.readouts.drift import drift_document
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.readouts.references import build_reference_profile, save_reference, window_stats
from driftline.storage.store import Store
from driftline.readouts.windows import window_ending
from bench_common import scratch_dir  # noqa: E402

DAY = 86400.0


def build(per_day: int, workdir: str) -> tuple[Store, float]:
    config = from_dict({})
    end = float(int(time.time() // 86400) * 86400)
    start = end - 21 * DAY
    store = Store(f"sqlite:///{workdir}/drift-{per_day}.db", clock=lambda: end)
    store.migrate()
    pipeline = Pipeline(config, store, clock=lambda: end)
    rng = np.random.default_rng(1)
    enc = msgspec.json.Encoder()
    n = per_day * 21
    ts = np.sort(start + rng.random(n) * 21 * DAY)
    num = rng.lognormal(3.0, 1.0, size=(n, 12))
    cats = rng.integers(0, 15, size=(n, 8))
    batch: list[RawRecord] = []
    for i in range(n):
        feats = {f"x{j}": float(num[i, j]) for j in range(12)}
        feats.update({f"c{j}": f"v{cats[i, j]}" for j in range(8)})
        raw = enc.encode({"type": "prediction", "prediction_id": f"p{i}", "model": "fraud", "ts": float(ts[i]),
                          "score": float(rng.random()), "features": feats})
        batch.append(RawRecord("file:bench", 0, i, raw))
        if len(batch) == 20000:
            pipeline.process_batch(batch)
            batch = []
    if batch:
        pipeline.process_batch(batch)
    stats, lo, hi = window_stats(store, config, "fraud", start, start + 14 * DAY)
    save_reference(store, "fraud", build_reference_profile(stats, config), "window", lo, hi, confusion=stats)
    return store, end


def latency_ms(store: Store, end: float, repeats: int = 15) -> float:
    config = from_dict({})
    window = window_ending(end, 7 * DAY, 3600)
    drift_document(store, config, "fraud", window)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        doc = drift_document(store, config, "fraud", window)
        times.append(time.perf_counter() - t)
    assert len(doc["features"]) == 20
    return statistics.median(times) * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", type=int, default=500, help="predictions per day, small database")
    ap.add_argument("--large", type=int, default=10000, help="predictions per day, large database")
    args = ap.parse_args()
    work = scratch_dir("driftline-drift-bench-")
    results = {}
    for per_day in (args.small, args.large):
        store, end = build(per_day, work)
        results[per_day] = latency_ms(store, end)
        print(f"{per_day * 21:>9,} predictions: drift over 20 features, 7-day window: {results[per_day]:.1f} ms")
    print(f"ratio large/small: {results[args.large] / results[args.small]:.2f} "
          f"for {args.large / args.small:.0f}x the events")


if __name__ == "__main__":
    main()
