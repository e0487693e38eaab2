"""Multivariate drift: what the per-bucket feature samples cost (ingestion time, bytes per bucket) and what the
statistic costs next to the univariate drift report.

Usage: python benchmarks/multivariate_bench.py [--per-day 20000] [--days 8] [--k 256]
Simulates the fraud stream (8 mixed-type features) and ingests it twice in the same run, once with the sampling
hook and once without (the hook replaced by a no-op): prints both times and their ratio. Then prints the stored
bytes per bucket sample (mean, max) and rows per sample, and the latency of `drift_document` (univariate +
multivariate) against the univariate part alone (the reference's sample removed), as a ratio.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import msgspec

import driftline.ingest.pipeline as pipeline_mod
from driftline.config import from_dict
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.ingest.simulate import SimSpec, stream
from driftline.readouts import drift as drift_mod
from driftline.readouts.drift import drift_document
from driftline.readouts.multivariate import freeze_reference_sample, reference_sample_from_buckets
from driftline.readouts.references import build_reference_profile, save_reference, window_stats
from driftline.readouts.windows import window_ending
from driftline.storage.samples import bucket_samples, reference_samples, stored_bytes
from driftline.storage.store import Store

DAY = 86400.0


def ingest(url: str, raws: list[bytes], config, end: float, sampling: bool) -> tuple[Store, float]:
    store = Store(url, clock=lambda: end)
    store.migrate()
    pipe = Pipeline(config, store, clock=lambda: end)
    hook = pipeline_mod.record_samples
    if not sampling:
        pipeline_mod.record_samples = lambda *a, **k: None  # type: ignore[assignment]
    try:
        t0 = time.perf_counter()
        for i in range(0, len(raws), 20_000):
            pipe.process_batch([RawRecord("file:bench", 0, j, raws[j]) for j in range(i, min(i + 20_000, len(raws)))])
        return store, time.perf_counter() - t0
    finally:
        pipeline_mod.record_samples = hook


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-day", type=int, default=20_000)
    ap.add_argument("--days", type=int, default=8)
    ap.add_argument("--k", type=int, default=256)
    args = ap.parse_args()
    end = float(int(time.time() // DAY) * DAY)
    start = end - args.days * DAY
    config = from_dict({"drift": {"sample_k": args.k}})
    enc = msgspec.json.Encoder()
    raws = [enc.encode(e) for e in stream(SimSpec(start=start, days=args.days, per_day=args.per_day, seed=3,
                                                  drift_day=None)) if e["type"] == "prediction"]
    with tempfile.TemporaryDirectory() as d:
        plain, t_plain = ingest(f"sqlite:///{d}/plain.db", raws, config, end, sampling=False)
        store, t_sampled = ingest(f"sqlite:///{d}/sampled.db", raws, config, end, sampling=True)
        print(f"ingest {len(raws):,} predictions: without samples {t_plain:.2f}s, with samples {t_sampled:.2f}s, "
              f"ratio {t_sampled / t_plain:.3f}")
        sizes = list(stored_bytes(store))
        rows = [len(s) for _, s in bucket_samples(store, "fraud", start, end)]
        print(f"bucket samples: {len(sizes)} rows, bytes mean {statistics.mean(sizes):,.0f} max {max(sizes):,}; "
              f"vectors per sample mean {statistics.mean(rows):.0f} max {max(rows)} (k={args.k}, "
              f"{args.per_day / 24:.0f} predictions an hour)")
        ref_end = start + (args.days // 2) * DAY
        stats, lo, hi = window_stats(store, config, "fraud", start, ref_end)
        ref_id = save_reference(store, "fraud", build_reference_profile(stats, config), "window", lo, hi,
                                confusion=stats)
        freeze_reference_sample(store, ref_id, reference_sample_from_buckets(store, config, "fraud", lo, hi))
        window = window_ending(end, (args.days - args.days // 2) * DAY, 3600)

        def latency() -> float:
            times = []
            for _ in range(5):
                drift_mod._profiles.clear()
                import driftline.readouts.multivariate as mv
                mv._cache.clear()
                t0 = time.perf_counter()
                drift_document(store, config, "fraud", window)
                times.append(time.perf_counter() - t0)
            return statistics.median(times)

        with_mv = latency()
        doc = drift_document(store, config, "fraud", window)["multivariate"]
        with store.write() as conn:
            conn.execute(reference_samples.delete())
        without = latency()
        print(f"drift_document: univariate only {without * 1000:.0f} ms, with multivariate {with_mv * 1000:.0f} ms, "
              f"ratio {with_mv / without:.2f} (multivariate: n={doc['n']}, {doc['permutations']} permutations, "
              f"drifted={doc['drifted']}, p={doc['p_value']})")
        plain.close()
        store.close()


if __name__ == "__main__":
    main()
