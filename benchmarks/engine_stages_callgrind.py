"""Instructions per event of replay's engine stages (issue 18), each counted alone by callgrind over the same
batches: `apply` (core/batch.py apply_batch), `finish` (Engine.finish: Moves.deltas, feature histograms) and
`samples` (ingest/sampling.py batch_columns, given the engine's feature columns as replay gives them).

A replay of the simulated stream is run once (outside valgrind) to capture each batch's accepted events and the
join view the engine was given; each stage is then replayed over those batches in a child under callgrind,
collecting only while `operator.call` runs the stage, so decoding, storage and start-up are never counted. Counts
move by ~±60 per event from run to run; a whole replay (replay_callgrind.py) moves by more than most changes to
one stage save. Compare commits from checkouts at paths of the same length.

Usage: python benchmarks/engine_stages_callgrind.py [--per-day N] [--days D] [--batches B] [--stages apply,finish]
Needs valgrind (apt-get install valgrind).
"""

from __future__ import annotations

import argparse
import copy
import inspect
import operator
import os
import pickle
import shutil
import sys
import tempfile
from typing import Any

from bench_common import callgrind_instructions, simulated_stream

STAGES = ("apply", "finish", "samples")


def capture(path: str, out: str) -> int:
    """Replay `path` into a fresh SQLite file, pickling each batch's (settings, accepted events, join view) to
    `out`; returns the number of events captured."""
    import driftline.ingest.pipeline as pipeline
    from driftline.config import Config
    from driftline.ingest.replay import replay
    from driftline.storage.store import Store

    got: list[tuple[Any, list[Any], Any]] = []
    inner = pipeline.apply_isolating

    def recording(settings: Any, ok: Any, load_view: Any, *args: Any, **kwargs: Any) -> Any:
        got.append((settings, list(ok), copy.deepcopy(load_view())))
        return inner(settings, ok, load_view, *args, **kwargs)

    pipeline.apply_isolating = recording  # type: ignore[assignment]
    work = tempfile.mkdtemp(prefix="driftline-stages-")
    try:
        store = Store(f"sqlite:///{os.path.join(work, 'stages.db')}")
        store.migrate()
        replay(pipeline.Pipeline(Config(), store), path)
        store.close()
    finally:
        shutil.rmtree(work)
        pipeline.apply_isolating = inner  # type: ignore[assignment]
    with open(out, "wb") as f:
        pickle.dump(got, f)
    return sum(len(ok) for _, ok, _ in got)


def _child(stage: str, batches_file: str, n_batches: int) -> None:
    """What runs under callgrind: one stage over the captured batches, called through operator.call (the toggle)."""
    from driftline.core.batch import apply_batch
    from driftline.core.engine import Engine
    from driftline.gc_tuning import tune_for_batches
    from driftline.ingest.sampling import batch_columns

    tune_for_batches()  # as the CLI does
    with open(batches_file, "rb") as f:
        got = pickle.load(f)[:n_batches]
    engines = [Engine(s, view) for s, _, view in got]
    if stage == "apply":
        operator.call(lambda: [apply_batch(e, ok) for e, (_, ok, _) in zip(engines, got)])
    elif stage == "finish":
        for e, (_, ok, _) in zip(engines, got):
            apply_batch(e, ok)
        operator.call(lambda: [e.finish() for e in engines])
    else:
        events = [[d for d, _ in ok] for _, ok, _ in got]
        columns: list[Any] = [None] * len(got)
        if "features" in inspect.signature(batch_columns).parameters:  # the engine's feature columns, as replay
            for e, (_, ok, _) in zip(engines, got):  # hands them on (commits before it transpose the dicts)
                apply_batch(e, ok)
            columns = [e.finish().feature_columns for e in engines]
            operator.call(lambda: [batch_columns(s, ev, 256, c) for (s, _, _), ev, c in zip(got, events, columns)])
        else:
            operator.call(lambda: [batch_columns(s, ev, 256) for (s, _, _), ev in zip(got, events)])


def stage_instructions(stage: str, batches_file: str, n_batches: int) -> int:
    """Instructions callgrind collected inside the stage's call (PYTHONHASHSEED fixed)."""
    return callgrind_instructions([sys.executable, __file__, "--child", stage, batches_file, str(n_batches)])


def main() -> None:
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (apt-get install valgrind)")
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=3, help="captured batches each stage is run over")
    ap.add_argument("--stages", default=",".join(STAGES))
    args, _ = ap.parse_known_args()
    work, path = simulated_stream(1800)
    batches_file = os.path.join(work, "batches.pickle")
    capture(path, batches_file)
    with open(batches_file, "rb") as f:
        n = sum(len(ok) for _, ok, _ in pickle.load(f)[:args.batches])
    print(f"events in {args.batches} batches   {n:,}")
    for stage in args.stages.split(","):
        print(f"{stage:<24}    {stage_instructions(stage, batches_file, args.batches) / n:,.0f} instructions per event")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        _child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        sys.argv += [] if "--days" in sys.argv else ["--days", "28"]
        main()
