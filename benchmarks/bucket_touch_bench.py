"""What the bucket writes of a replay touch, batch by batch (issue 18): buckets touched, how many of the stored ones
only by label moves (no new predictions, so no feature histogram changes), stored bytes read and written, the
feature histograms' share of the bytes read, and the CPU seconds of the merge (store reads, encode_merged, writes).
The measurements that size a stored-format change: a touch that moves labels alone still reads, decodes, re-encodes
and rewrites the whole blob, feature histograms included.

Usage: python benchmarks/bucket_touch_bench.py [--per-day N] [--days D] [--workdir DIR] [--every K]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from typing import Any

import msgspec

import driftline.storage.bucket_writes as bucket_writes
from driftline.config import Config
from driftline.core.stats import BucketStats
from driftline.gc_tuning import tune_for_batches
from driftline.ingest.pipeline import Pipeline
from driftline.ingest.replay import replay
from driftline.storage.store import Store

from bench_common import simulated_stream

_COLUMNS = ("touched", "stored", "labels_only", "read_kB", "features_kB", "written_kB", "merge_s", "encode_s")
_FEATURES = msgspec.msgpack.Decoder(dict[str, msgspec.Raw])
"""A stored bucket's top-level values as their encoded bytes (the feature histograms' size without decoding them)."""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--every", type=int, default=10, help="print every K-th batch (and the first 3 and the last)")
    args, _ = ap.parse_known_args()
    work, path = simulated_stream(20000)
    rows: list[dict[str, float]] = []
    current: dict[str, float] = {}
    merge, encode = bucket_writes.merge_buckets, bucket_writes.encode_merged

    def merge_buckets(conn: Any, dialect: str, deltas: dict[Any, BucketStats], *rest: Any) -> None:
        current.clear()
        current.update(dict.fromkeys(_COLUMNS, 0.0), touched=len(deltas))
        t = time.process_time()
        merge(conn, dialect, deltas, *rest)
        current["merge_s"] = time.process_time() - t
        rows.append(dict(current))

    def encode_merged(olds: Sequence[bytes | None], deltas: Sequence[BucketStats], *rest: Any) -> list[bytes]:
        for old, d in zip(olds, deltas):
            if old is not None:
                current["stored"] += 1
                current["labels_only"] += not d.features
                current["read_kB"] += len(old) / 1e3
                current["features_kB"] += len(_FEATURES.decode(old).get("f", b"")) / 1e3
        t = time.process_time()
        out = encode(olds, deltas, *rest)
        current["encode_s"] += time.process_time() - t
        current["written_kB"] += sum(map(len, out)) / 1e3
        return out

    bucket_writes.merge_buckets, bucket_writes.encode_merged = merge_buckets, encode_merged  # type: ignore[assignment]
    db = os.path.join(work, "touch.db")
    if os.path.exists(db):
        os.remove(db)
    tune_for_batches()
    store = Store(f"sqlite:///{db}")
    store.migrate()
    replay(Pipeline(Config(), store), path)
    store.close()
    print("batch " + " ".join(f"{c:>11}" for c in _COLUMNS))
    for i, row in enumerate(rows):
        if i < 3 or i % args.every == 0 or i == len(rows) - 1:
            print(f"{i:5d} " + " ".join(_cell(c, row[c]) for c in _COLUMNS))
    total = {c: sum(r[c] for r in rows) for c in _COLUMNS}
    print("total " + " ".join(_cell(c, total[c]) for c in _COLUMNS))
    stored = max(total["stored"], 1)
    print(f"stored buckets touched by label moves alone: {total['labels_only'] / stored:.1%}; feature histograms: "
          f"{total['features_kB'] / max(total['read_kB'], 1e-9):.1%} of the bytes read; "
          f"{total['written_kB'] / len(rows) / 1e3:.1f} MB rewritten per batch")


def _cell(column: str, value: float) -> str:
    return f"{value:11.3f}" if column.endswith("_s") else f"{value:11,.0f}"


if __name__ == "__main__":
    main()
