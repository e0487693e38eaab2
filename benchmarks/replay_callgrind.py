"""`driftline replay`'s instructions per event counted inside the replay call only (callgrind), so that two commits
can be told apart by a few hundred instructions per event.

replay_instructions.py subtracts a start-up run from a replay run; the two start-ups differ by up to ~20 M
instructions from run to run (~900 per event on its 22 k-event stream), more than most single changes save. Here
valgrind's callgrind collects only while `operator.call` runs (the child calls replay through it, and nothing in a
replay calls it), so imports, migration and exit are never counted: the same tree at the same path gives the same
count to the instruction. Compare commits from checkouts at paths of the same length (module paths move the
count by ~200 per event).

Usage: python benchmarks/replay_callgrind.py [--per-day N] [--days D] [--workdir DIR] [--end RFC3339]
Without --end the stream ends now, so each run replays a slightly different stream (two runs of one tree differed
by ~100 instructions an event); pass e.g. --end 2026-11-30T00:00:00Z to compare trees on the same events.
Needs valgrind (apt-get install valgrind).
"""

from __future__ import annotations

import operator
import os
import shutil
import sys
import tempfile

from bench_common import callgrind_instructions, count_lines, simulated_stream


def _child(path: str) -> None:
    """What runs under callgrind: a replay into a fresh SQLite file, called through operator.call (the toggle)."""
    from driftline.config import Config
    from driftline.gc_tuning import tune_for_batches
    from driftline.ingest.pipeline import Pipeline
    from driftline.ingest.replay import replay
    from driftline.storage.store import Store

    tune_for_batches()  # as the CLI does
    work = tempfile.mkdtemp(prefix="driftline-cg-")
    store = Store(f"sqlite:///{os.path.join(work, 'cg.db')}")
    store.migrate()
    operator.call(replay, Pipeline(Config(), store), path)
    store.close()
    shutil.rmtree(work)


def replay_instructions(path: str) -> int:
    """Instructions callgrind collected inside the replay call (PYTHONHASHSEED fixed)."""
    return callgrind_instructions([sys.executable, __file__, "--child", path])


def main() -> None:
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (apt-get install valgrind)")
    _, path = simulated_stream(1800)
    n = count_lines(path)
    ir = replay_instructions(path)
    print(f"events                      {n:,}")
    print(f"replay into SQLite          {ir / n:,.0f} instructions per event (inside the replay call only)")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        _child(sys.argv[2])
    else:
        sys.argv += [] if "--days" in sys.argv else ["--days", "7"]
        main()
