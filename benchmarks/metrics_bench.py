"""The 7-day `metrics` query at two stored volumes (issue 18: "< 50 ms, flat in event count"): wall and CPU time of
`metrics_document` on each store and the large store's ratio to the small one, measured in the same run.

Usage: python benchmarks/metrics_bench.py [--small N] [--large N] [--days D] [--repeats R] [--partitions P]
                                          [--db-small URL --db-large URL]
Without --db-small/--db-large it simulates D days (default 28) at N predictions a day for each store (defaults 1,800
and 92,000: ~96 k and ~4.9 M events) and replays each through the CLI (`driftline replay`, a child process) into a
temporary SQLite database; the large one takes minutes. `--partitions P` stores the large one as the live service
does from P Kafka partitions (a bucket per partition and hour: P times the rows a window reads). The queries
alternate between the two stores, so the machine's load drifts over both alike. Also printed: the window's buckets and the bytes of their blobs, which is what
the query reads (a bucket's ranking section grows with its distinct labelled scores up to the grid's bound).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import zlib

import msgspec
from sqlalchemy import text

from driftline.config import Config
from driftline.readouts.metrics import MetricsQuery, metrics_document
from driftline.storage.store import Store

from bench_common import scratch_dir

WINDOW_S = 7 * 86400


def build(work: str, per_day: int, days: float, partitions: int = 1) -> str:
    """A SQLite store of the simulated stream at `per_day` predictions a day: replayed by the CLI (`driftline
    replay`, a child process), or, with `partitions` > 1, stored as `run` stores Kafka records of that many
    partitions (each event on partition crc32(prediction_id) mod P of its topic; a bucket per partition)."""
    events, db = os.path.join(work, f"events-{per_day}.jsonl"), os.path.join(work, f"store-{per_day}-{partitions}.db")
    cli = [sys.executable, "-m", "driftline.cli"]
    subprocess.run([*cli, "simulate", "--days", str(days), "--per-day", str(per_day), "--out", events], check=True,
                   stdout=subprocess.DEVNULL)
    if partitions > 1:
        store_partitioned(events, f"sqlite:///{db}", partitions)
    else:
        subprocess.run([*cli, "--db", f"sqlite:///{db}", "replay", events], check=True, stdout=subprocess.DEVNULL)
    os.remove(events)
    return f"sqlite:///{db}"


def store_partitioned(events: str, url: str, partitions: int, batch: int = 20000) -> None:
    """Store a JSON-lines file through the pipeline as records of `partitions` partitions of the two topics."""
    from driftline.ingest.pipeline import Pipeline, RawRecord

    class _Id(msgspec.Struct):
        prediction_id: str
        type: str

    decoder = msgspec.json.Decoder(_Id)
    store = Store(url)
    store.migrate()
    pipeline = Pipeline(Config(), store)
    offsets: dict[tuple[str, int], int] = {}
    records: list[RawRecord] = []
    with open(events, "rb") as fh:
        for line in fh:
            line = line.rstrip(b"\n")
            ev = decoder.decode(line)
            key = ("predictions" if ev.type == "prediction" else "outcomes",
                   zlib.crc32(ev.prediction_id.encode()) % partitions)
            offsets[key] = offsets.get(key, -1) + 1
            records.append(RawRecord(key[0], key[1], offsets[key], line))
            if len(records) >= batch:
                pipeline.process_batch(records)
                records = []
    if records:
        pipeline.process_batch(records)
    store.close()


def describe(store: Store, config: Config) -> str:
    """Events stored, labelled predictions in the window, the window's buckets and their bytes."""
    doc = metrics_document(store, config, MetricsQuery("fraud", WINDOW_S))
    start, end = doc["window"]["start"], doc["window"]["end"]
    with store.read() as conn:
        n = sum(int(conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one()) for t in ("predictions", "outcomes"))
    rows = store.buckets("fraud", _epoch(start), _epoch(end), features=False)
    size = _blob_bytes(store, start, end)
    return (f"{n:,} events stored, {doc['counts']['labelled']:,} labelled in the window, {len(rows)} buckets, "
            f"{size / 1e6:.1f} MB of bucket blobs")


def _epoch(iso_text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(iso_text.replace("Z", "+00:00")).timestamp()


def _blob_bytes(store: Store, start: str, end: str) -> int:
    with store.read() as conn:
        return int(conn.execute(text("SELECT coalesce(sum(length(data)), 0) FROM buckets WHERE model = 'fraud' AND "
                                     "bucket_start >= :s AND bucket_start < :e"),
                                {"s": _epoch(start), "e": _epoch(end)}).scalar_one())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", type=int, default=1800)
    ap.add_argument("--large", type=int, default=92000)
    ap.add_argument("--days", type=float, default=28)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--db-small", default=None)
    ap.add_argument("--db-large", default=None)
    ap.add_argument("--partitions", type=int, default=1,
                    help="store the large stream as `run` would from this many Kafka partitions (default 1: replay)")
    args = ap.parse_args()
    work = scratch_dir("driftline-metricsbench-")
    urls = {"small": args.db_small or build(work, args.small, args.days),
            "large": args.db_large or build(work, args.large, args.days, args.partitions)}
    config = Config()
    stores = {k: Store(u) for k, u in urls.items()}
    for store in stores.values():  # warm: imports, statement caches, the file in the page cache
        metrics_document(store, config, MetricsQuery("fraud", WINDOW_S))
    wall: dict[str, list[float]] = {k: [] for k in stores}
    cpu: dict[str, list[float]] = {k: [] for k in stores}
    for _ in range(args.repeats):
        for k, store in stores.items():
            t, c = time.perf_counter(), time.process_time()
            metrics_document(store, config, MetricsQuery("fraud", WINDOW_S))
            wall[k].append(time.perf_counter() - t)
            cpu[k].append(time.process_time() - c)
    for k, store in stores.items():
        print(f"{k:<6} {describe(store, config)}")
        print(f"       7-day metrics: wall median {statistics.median(wall[k]) * 1000:6.1f} ms "
              f"(min {min(wall[k]) * 1000:.1f}), CPU median {statistics.median(cpu[k]) * 1000:6.1f} ms "
              f"(min {min(cpu[k]) * 1000:.1f}); median of {args.repeats}, alternating")
    print(f"large / small: wall {statistics.median(wall['large']) / statistics.median(wall['small']):.2f}, "
          f"CPU {statistics.median(cpu['large']) / statistics.median(cpu['small']):.2f} (1.00 = flat in event count)")
    for store in stores.values():
        store.close()


if __name__ == "__main__":
    main()
