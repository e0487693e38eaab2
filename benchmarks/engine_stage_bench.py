"""CPU seconds of the engine stage (apply_batch, without the join lookup and bucket deltas), of process_batch's own
loop (everything it does itself, outside decode, gate, engine, samples, fence and store) and of the label gate,
during `replay` of the simulated stream: the parts issue 18's engine work targets.

Usage: python benchmarks/engine_stage_bench.py [--per-day N] [--days D] [--workdir DIR]
"""

from __future__ import annotations

import contextlib
import os
import time
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import driftline.core.engine as engine
import driftline.ingest.labels as labels
import driftline.ingest.pipeline as pipeline
import driftline.storage.store as store
from driftline.config import Config
from driftline.ingest.replay import replay

from bench_common import time_into, count_lines, simulated_stream

SPENT: dict[str, float] = defaultdict(float)


def _timed(owner: Any, name: str, stage: str) -> None:
    """Wrap owner.name so its CPU time adds to SPENT[stage]."""
    time_into(SPENT, owner, name, stage)


def _timed_context(owner: Any, name: str, stage: str) -> None:
    """Wrap a context-manager method so the CPU time of its enter and exit adds to SPENT[stage]."""
    inner = getattr(owner, name)

    @contextlib.contextmanager
    def wrapper(*args: Any, **kwargs: Any) -> Iterator[Any]:
        t = time.process_time()
        cm = inner(*args, **kwargs)
        value = cm.__enter__()
        SPENT[stage] += time.process_time() - t
        try:
            yield value
        except BaseException as err:
            t = time.process_time()
            if not cm.__exit__(type(err), err, err.__traceback__):
                raise
        else:
            t = time.process_time()
            cm.__exit__(None, None, None)
        finally:
            SPENT[stage] += time.process_time() - t

    setattr(owner, name, wrapper)


def main() -> None:
    work, path = simulated_stream(1800)
    n = count_lines(path)
    _timed(pipeline.Pipeline, "process_batch", "process_batch")
    for name in ("decode_many", "apply_isolating", "record_samples"):
        _timed(pipeline, name, name)
    _timed(labels.LabelPolicy, "gate", "gate")
    _timed(labels.LabelPolicy, "record", "gate record")
    _timed(pipeline.Pipeline, "_fence_files", "fence")
    _timed(store.Store, "load_join", "load_join")
    _timed(store.Store, "commit_batch", "commit_batch")
    _timed_context(store.Store, "write", "store.write enter/exit")
    _timed(engine.Engine, "finish", "finish")
    db = os.path.join(work, "engine_stage.db")
    if os.path.exists(db):
        os.remove(db)
    st = store.Store(f"sqlite:///{db}")
    st.migrate()
    t = time.process_time()
    replay(pipeline.Pipeline(Config(), st), path)
    total = time.process_time() - t
    s = SPENT
    eng = s["apply_isolating"] - s["load_join"] - s["finish"]
    loop = s["process_batch"] - sum(s[k] for k in ("decode_many", "apply_isolating", "record_samples", "gate",
                                                    "gate record", "fence", "commit_batch", "store.write enter/exit"))
    print(f"events                       {n:,}")
    print(f"replay                       {total:.3f} CPU s")
    print(f"engine (apply, no lookup/finish) {eng:.3f} s")
    print(f"process_batch own loop       {loop:.3f} s")
    print(f"label gate                   {s['gate']:.3f} s")
    print(f"  (apply_isolating {s['apply_isolating']:.3f}, load_join {s['load_join']:.3f}, finish {s['finish']:.3f})")
    print(f"target total                 {eng + loop + s['gate']:.3f} s")


if __name__ == "__main__":
    main()
