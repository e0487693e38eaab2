"""Would decoding the next batch in a second thread, while the current one is stored, speed up `replay`?

The database releases the GIL inside SQLite's C calls (~17 % of a replay's time), so a thread decoding batch N+1
meanwhile could in principle hide up to the decode's share (~14 %). This runs the pipeline's own batches both ways
on the same records (read once), alternating, into fresh SQLite files: sequentially, and with each batch's
`decode_many` done ahead in a worker thread (the pipeline takes the ready result). It prints wall and CPU seconds
and the overlapped run's wall time as a ratio of the sequential one measured in the same run (< 1: it pays).
Issue 18 tried it and left it out (docs/PERFORMANCE.md, "Decoding ahead in a thread").

Usage: python benchmarks/replay_overlap_bench.py [--per-day N] [--days D] [--repeat K] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import driftline.ingest.pipeline as pipeline
from driftline.config import Config
from driftline.core.decode_many import decode_many
from driftline.gc_tuning import tune_for_batches
from driftline.ingest.isolation import TICK
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.ingest.replay import BATCH, _records, source_name
from driftline.storage.store import Store

from bench_common import simulated_stream


def read_batches(path: str) -> list[list[RawRecord]]:
    """The file's records in replay's batches of BATCH (read once, outside the timed part)."""
    records: list[RawRecord] = []
    with open(path, "rb") as fh:
        for chunk in _records(fh, source_name(path), 0, [], [], [-1], Pipeline(Config(), Store("sqlite://")).limits,
                              [0]):
            records += chunk
    return [records[i:i + BATCH] for i in range(0, len(records), BATCH)]


def fresh_pipeline(db: str) -> Pipeline:
    """A pipeline on a new, migrated SQLite file."""
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    store = Store(f"sqlite:///{db}")
    store.migrate()
    return Pipeline(Config(), store)


def run(batches: list[list[RawRecord]], db: str, ahead: bool) -> tuple[float, float]:
    """(wall, CPU) seconds of processing every batch, sequentially or decoding one batch ahead in a thread."""
    pipe = fresh_pipeline(db)
    ready: dict[int, list] = {}

    def cached(records: Sequence[RawRecord], limits: object) -> list:
        got = ready.pop(id(records[0]), None)
        return got if got is not None else decode_many(records, limits)  # type: ignore[arg-type]

    def decode_ahead(batch: list[RawRecord]) -> None:
        for start in range(0, len(batch), TICK):  # the pipeline decodes in runs of TICK records
            part = batch[start:start + TICK]
            ready[id(part[0])] = decode_many(part, pipe.limits)

    original: Callable = pipeline.decode_many
    pipeline.decode_many = cached
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        if not ahead:
            for batch in batches:
                pipe.process_batch(batch)
        else:
            with ThreadPoolExecutor(1) as pool:
                for i, batch in enumerate(batches):
                    nxt = pool.submit(decode_ahead, batches[i + 1]) if i + 1 < len(batches) else None
                    pipe.process_batch(batch)
                    if nxt is not None:
                        nxt.result()
    finally:
        pipeline.decode_many = original
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    """Alternate sequential and overlapped runs; print each and the median ratio."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args, _ = ap.parse_known_args()
    work, path = simulated_stream(1800)
    tune_for_batches()
    batches = read_batches(path)
    print(f"events {sum(map(len, batches)):,} in {len(batches)} batches")
    ratios = []
    for k in range(args.repeat):
        seq = run(batches, os.path.join(work, "seq.db"), ahead=False)
        ovl = run(batches, os.path.join(work, "ovl.db"), ahead=True)
        ratios.append(ovl[0] / seq[0])
        print(f"round {k + 1}: sequential {seq[0]:.2f} s wall {seq[1]:.2f} s CPU; decoding ahead {ovl[0]:.2f} s wall "
              f"{ovl[1]:.2f} s CPU; wall ratio {ratios[-1]:.3f}")
    print(f"decoding ahead / sequential, wall time: median {statistics.median(ratios):.3f} (< 1: it pays)")


if __name__ == "__main__":
    main()
