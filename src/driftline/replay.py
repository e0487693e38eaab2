"""Replay JSON-lines files (or stdin) through the pipeline in batches, resuming at the stored position."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from typing import BinaryIO

from .events import json_lines
from .pipeline import BatchResult, Pipeline, RawRecord

BATCH = 20000


def source_name(path: str) -> str:
    """Stable source identity for positions: the absolute path, or 'stdin'."""
    return "stdin" if path == "-" else "file:" + os.path.abspath(path)


def _records(fh: BinaryIO, source: str, start: int) -> Iterator[RawRecord]:
    for lineno, payload in json_lines(fh):
        if lineno >= start:
            yield RawRecord(source, 0, lineno, payload)


def replay(pipeline: Pipeline, path: str, on_batch: Callable[[BatchResult, int], None] | None = None,
           batch_size: int = BATCH) -> BatchResult:
    """Ingest a file (or '-' for stdin); a file already replayed resumes after its stored position."""
    source = source_name(path)
    start = 0 if path == "-" else pipeline.store.positions(source).get(0, 0)
    total = BatchResult()
    fh: BinaryIO = sys.stdin.buffer if path == "-" else open(path, "rb")
    try:
        batch: list[RawRecord] = []
        consumed = 0
        for rec in _records(fh, source, start):
            batch.append(rec)
            if len(batch) >= batch_size:
                res = pipeline.process_batch(batch)
                total.add(res)
                consumed = fh.tell() if fh is not sys.stdin.buffer else 0
                if on_batch:
                    on_batch(res, consumed)
                batch = []
        if batch:
            res = pipeline.process_batch(batch)
            total.add(res)
            if on_batch:
                on_batch(res, fh.tell() if fh is not sys.stdin.buffer else 0)
    finally:
        if fh is not sys.stdin.buffer:
            fh.close()
    return total
