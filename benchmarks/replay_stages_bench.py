"""Where `replay` spends its CPU time, stage by stage, and its rate as a ratio of raw msgspec decode, both in CPU
seconds of this process (on a machine shared with other work, CPU time moves far less than wall time).

Usage: python benchmarks/replay_stages_bench.py [--per-day N] [--days D] [--workdir DIR]
To compare two commits, run it alternately with PYTHONPATH pointing at each one's src/ (the stage hooks wrap
functions by name and skip the ones a commit does not have).
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from typing import Any

import driftline.core.engine as engine
import driftline.ingest.labels as labels
import driftline.ingest.pipeline as pipeline
import driftline.storage.bucket_writes as bucket_writes
import driftline.storage.bulk as bulk
import driftline.storage.store as store
from driftline.config import Config
from driftline.ingest.replay import replay

from bench_common import time_into, count_lines, decode_seconds, simulated_stream

SPENT: dict[str, float] = defaultdict(float)


def _timed(owner: Any, name: str, stage: str) -> None:
    """Wrap owner.name so its CPU time adds to SPENT[stage]."""
    time_into(SPENT, owner, name, stage)


def main() -> None:
    work, path = simulated_stream(1800)
    n = count_lines(path)
    _timed(pipeline, "decode_many", "decode")
    _timed(pipeline, "decode", "decode")
    _timed(labels.LabelPolicy, "gate", "label gate")
    _timed(store.Store, "load_join", "join lookup")
    _timed(engine.Engine, "finish", "bucket deltas (finish)")
    _timed(pipeline, "apply_isolating", "engine incl. lookup+finish")
    _timed(store.Store, "commit_batch", "store writes")
    _timed(bulk, "write_predictions", "  of which join rows")
    _timed(bulk, "write_outcomes", "  of which outcome rows")
    _timed(bucket_writes, "merge_buckets", "  of which buckets")
    _timed(pipeline, "record_samples", "feature samples")
    db = os.path.join(work, "stages.db")
    if os.path.exists(db):
        os.remove(db)
    try:
        from driftline.gc_tuning import tune_for_batches
        tune_for_batches()  # as the CLI does
    except ImportError:  # a commit from before it (alternating comparisons)
        pass
    st = store.Store(f"sqlite:///{db}")
    st.migrate()
    t = time.process_time()
    replay(pipeline.Pipeline(Config(), st), path)
    total = time.process_time() - t
    raw = decode_seconds(path, clock=time.process_time)
    print(f"events                     {n:,}")
    print(f"replay into SQLite         {total:.2f} CPU s, {n / total:,.0f} events per CPU second")
    print(f"raw msgspec decode         {n / raw:,.0f} events per CPU second (baseline)")
    print(f"replay / raw decode        {raw / total:.4f}")
    for stage, spent in SPENT.items():
        print(f"  {stage:<26} {spent:6.2f} s  {spent / total:4.0%}")


if __name__ == "__main__":
    main()
