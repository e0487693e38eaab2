"""CPU seconds of reading a JSON-lines file into batches of raw records the way `replay` does, without decoding:
the block reader (core/lines.py, ingest/replay.py) against the line-at-a-time reference (`_by_readline`).

Usage: python benchmarks/lines_bench.py [--per-day N] [--days D] [--workdir DIR]
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from driftline.core.limits import Limits
from driftline.core.lines import _by_readline
from driftline.ingest.pipeline import RawRecord
from driftline.ingest.replay import BATCH, BATCH_BYTES, _records, open_events

from bench_common import best_seconds, count_lines, simulated_stream


def by_line(path: str) -> int:
    """The reference: a generator of one record per line, batched record by record."""
    def records(fh) -> Iterator[RawRecord]:  # type: ignore[no-untyped-def]
        for lineno, payload in _by_readline(fh, None, Limits().max_event_bytes):
            yield RawRecord("file:x", 0, lineno, payload)

    batches = 0
    with open_events(path) as (fh, _):
        batch: list[RawRecord] = []
        size = 0
        for rec in records(fh):
            batch.append(rec)
            size += len(rec.payload)
            if len(batch) >= BATCH or size >= BATCH_BYTES:
                batches += 1
                batch, size = [], 0
    return batches


def by_block(path: str) -> int:
    """`replay`'s reading: blocks of records (the batching arithmetic is left out: it is per block, not per line)."""
    n = 0
    with open_events(path) as (fh, _):
        for chunk in _records(fh, "file:x", 0, [], [], [-1], Limits()):
            n += len(chunk)
    return n


def main() -> None:
    _, path = simulated_stream(1800)
    n = count_lines(path)
    ref = best_seconds(lambda: by_line(path), repeats=9, clock=time.process_time)
    new = best_seconds(lambda: by_block(path), repeats=9, clock=time.process_time)
    print(f"lines                      {n:,}")
    print(f"line at a time             {ref:.4f} CPU s")
    print(f"blocks                     {new:.4f} CPU s")
    print(f"speed-up                   {ref / new:.2f}x")


if __name__ == "__main__":
    main()
