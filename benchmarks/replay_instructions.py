"""`driftline replay`'s cost in CPU instructions (valgrind), against raw msgspec decode of the same file.

Instruction counts do not move with the machine's load, so two commits can be compared on a shared 2-core machine
where CPU seconds swing by ±30 %: run it with PYTHONPATH pointing at each commit's src/. Start-up (imports, schema)
is measured alone and subtracted. Slow: ~50× under valgrind, so the default stream is a week at 1,800 events a day.

Usage: python benchmarks/replay_instructions.py [--per-day N] [--days D] [--workdir DIR]
Needs valgrind (apt-get install valgrind).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile

from bench_common import count_lines, simulated_stream


def _child(mode: str, path: str) -> None:
    """What runs under valgrind: start-up only, a replay into a fresh SQLite file, or raw decode of every line."""
    import msgspec

    from driftline.config import Config
    from driftline.ingest.pipeline import Pipeline
    from driftline.ingest.replay import replay
    from driftline.storage.store import Store

    try:
        from driftline.gc_tuning import tune_for_batches
        tune_for_batches()  # as the CLI does
    except ImportError:  # a commit from before it (comparisons)
        pass
    work = tempfile.mkdtemp(prefix="driftline-ir-")
    store = Store(f"sqlite:///{os.path.join(work, 'ir.db')}")
    store.migrate()
    if mode == "replay":
        replay(Pipeline(Config(), store), path)
    elif mode == "decode":
        dec = msgspec.json.Decoder()
        with open(path, "rb") as fh:
            for line in fh:
                dec.decode(line)
    store.close()
    shutil.rmtree(work)


def instructions(mode: str, path: str) -> int:
    """Instructions valgrind counted for one child run (PYTHONHASHSEED fixed: the same count every run)."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    out = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                          sys.executable, __file__, "--child", mode, path], env=env, capture_output=True, text=True,
                         check=True).stderr
    match = re.search(r"I\s+refs:\s+([\d,]+)", out)
    if match is None:
        raise RuntimeError(f"no instruction count in valgrind's output:\n{out[-2000:]}")
    return int(match.group(1).replace(",", ""))


def main() -> None:
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (apt-get install valgrind)")
    _, path = simulated_stream(1800)
    n = count_lines(path)
    base = instructions("none", path)
    replay_ir = instructions("replay", path) - base
    decode_ir = instructions("decode", path) - base
    print(f"events                      {n:,}")
    print(f"replay into SQLite          {replay_ir / n:,.0f} instructions per event")
    print(f"raw msgspec decode          {decode_ir / n:,.0f} instructions per event (baseline)")
    print(f"replay / raw decode         {decode_ir / replay_ir:.4f} (by instructions)")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        _child(sys.argv[2], sys.argv[3])
    else:
        sys.argv += [] if "--days" in sys.argv else ["--days", "7"]
        main()
