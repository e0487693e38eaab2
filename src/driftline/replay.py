"""Replay JSON-lines files (or stdin) through the pipeline in batches, resuming at the stored position.

A file's stored position is a line number, so it is only trusted while the file is the one it was measured on:
each batch also stores a fingerprint of the file's first line, and a file whose first line changed (a new export
written to the same path) or that is now shorter than the position is replayed from its start instead of having
its first lines silently skipped (events already stored then count as duplicates).
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import BinaryIO

from .events import json_lines
from .pipeline import BatchResult, Pipeline, RawRecord

BATCH = 20000
FINGERPRINT = "replay_head:"
"""Meta key prefix (then the source name) of the stored first-line fingerprint of a replayed file."""


def source_name(path: str) -> str:
    """Stable source identity for positions: the absolute path, or 'stdin'."""
    return "stdin" if path == "-" else "file:" + os.path.abspath(path)


def _records(fh: BinaryIO, source: str, start: int) -> Iterator[RawRecord]:
    for lineno, payload in json_lines(fh):
        if lineno >= start:
            yield RawRecord(source, 0, lineno, payload)


def head_fingerprint(path: str) -> str:
    """SHA-256 of the file's first JSON line (empty for a file without one)."""
    with open(path, "rb") as fh:
        for _, payload in json_lines(fh):
            return hashlib.sha256(payload).hexdigest()
    return ""


def _line_count(path: str) -> int:
    """Lines as `enumerate(file)` numbers them: newlines, plus a last line without one."""
    lines, last = 0, b"\n"
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            lines += chunk.count(b"\n")
            last = chunk[-1:]
    return lines + (last != b"\n")


def resume_point(pipeline: Pipeline, path: str) -> tuple[int, str | None]:
    """(line to resume at, why the stored position was not used, or None) for a file; stdin always starts at 0."""
    if path == "-":
        return 0, None
    source = source_name(path)
    stored = pipeline.store.positions(source).get(0, 0)
    if stored == 0:
        return 0, None
    known = pipeline.store.meta(FINGERPRINT + source)
    if known is not None and known != head_fingerprint(path):
        return 0, (f"{path}: its first line changed since it was replayed up to line {stored:,}: replaying it from "
                   "the start (events already stored count as duplicates)")
    if _line_count(path) < stored:
        return 0, (f"{path}: now shorter than the {stored:,} lines already replayed: replaying it from the start "
                   "(events already stored count as duplicates)")
    return stored, None


def replay(pipeline: Pipeline, path: str, on_batch: Callable[[BatchResult, int], None] | None = None,
           batch_size: int = BATCH, start: int | None = None) -> BatchResult:
    """Ingest a file (or '-' for stdin); a file already replayed resumes after its stored position (see
    `resume_point`; `start` overrides it)."""
    source = source_name(path)
    if start is None:
        start = resume_point(pipeline, path)[0]
    meta = None if path == "-" else {FINGERPRINT + source: head_fingerprint(path)}
    total = BatchResult()
    fh: BinaryIO = sys.stdin.buffer if path == "-" else open(path, "rb")
    try:
        batch: list[RawRecord] = []
        consumed = 0
        for rec in _records(fh, source, start):
            batch.append(rec)
            if len(batch) >= batch_size:
                res = pipeline.process_batch(batch, meta=meta)
                total.add(res)
                consumed = fh.tell() if fh is not sys.stdin.buffer else 0
                if on_batch:
                    on_batch(res, consumed)
                batch = []
        if batch:
            res = pipeline.process_batch(batch, meta=meta)
            total.add(res)
            if on_batch:
                on_batch(res, fh.tell() if fh is not sys.stdin.buffer else 0)
    finally:
        if fh is not sys.stdin.buffer:
            fh.close()
    return total
