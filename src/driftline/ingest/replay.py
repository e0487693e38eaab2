"""Replay JSON-lines files (or stdin) through the pipeline in batches, resuming at the stored position.

A file's stored position is a line number, so it is only trusted while the file is the one it was measured on:
each batch also stores, in its transaction, a CRC-32 of every line up to the position (`sum_key`), and the lines
a resumed replay skips are summed again as it reads past them; a file whose lines up to the position changed (a
new export written to the same path, even one of the same length) or that is now shorter than the position is
replayed from its start instead of having lines silently skipped (events already stored then count as
duplicates). A database written before the sum was stored falls back to the first line's fingerprint.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import lzma
import os
import sys
import zlib
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import accumulate, repeat
from operator import attrgetter
from typing import IO, Any

from ..config import ConfigError
from ..config_service import BATCH_BYTES as DEFAULT_BATCH_BYTES
from ..core.events import DeadLetter, decode, json_lines
from ..wide_text import wide_encoding
from ..core.lines import json_line_blocks
from ..core.limits import Limits
from ..storage.errors import StoreUnavailable
from ..terminal import shell_word
from .isolation import Tick
from .pipeline import BatchResult, Pipeline, RawRecord

BATCH = 30000
"""Events a transaction unless `--batch-size` says otherwise: fewer, larger transactions rewrite each touched bucket
blob and join-row page fewer times per event (user+sys -7 % at 1.07 M simulated events, -16 % at 4.9 M, against
20,000), and a batch's memory grows with it, ~1.9 kB an event (peak RSS of a 4.9 M-event replay 233 -> 247 MB; the
bound is 300 MB, and 40,000 reached 265 MB). Measured in docs/PERFORMANCE.md (issue 18: the replay batch size)."""
BATCH_BYTES = DEFAULT_BATCH_BYTES
"""A batch is also cut at the line that brings it to this many payload bytes, so memory stays bounded whatever
the lines' sizes (the rule and default of `run`'s kafka.batch_max_bytes)."""
_PAYLOAD = attrgetter("payload")


@dataclass(slots=True)
class ReplayResult(BatchResult):
    """A replay's batches summed, and what it noticed about the file."""

    held_back: int | None = None
    """Line number of a last line without newline that is not valid JSON yet (left for the next run)."""
    restarted: str | None = None
    """Why the stored position was dropped and the file replayed from its start, when it was."""
    unreadable: str | None = None
    """Where and why a truncated or damaged compressed file stopped (what was read before is stored)."""


def fingerprint_key(source: str) -> str:
    """Meta key of a replayed file's stored first-line fingerprint (the source is hashed: keys are 200 wide)."""
    return "replay_head:" + hashlib.sha256(source.encode()).hexdigest()


def sum_key(source: str) -> str:
    """Meta key of a replayed file's 'LINES CRC' pair: the CRC-32 of its first LINES lines (`line_sum`)."""
    return "replay_sum:" + hashlib.sha256(source.encode()).hexdigest()


def line_sum(payloads: Sequence[bytes], crc: int = 0) -> int:
    """CRC-32 of the lines' payloads each followed by a newline, continuing `crc`: summing a file batch by batch
    gives the sum of all its lines so far: ~0.1 ms per 1,000 lines, one C call over the joined batch (not over the
    joined batch + b"\n": copying a batch's megabytes once more took twice as long as the sum itself)."""
    return zlib.crc32(b"\n", zlib.crc32(b"\n".join(payloads), crc)) if payloads else crc


def stored_sum(pipeline: Pipeline, source: str, start: int) -> int | None:
    """The CRC-32 stored for the first `start` lines of the source; None when none is stored for exactly that
    position (a database from before sums were stored)."""
    value = pipeline.store.meta(sum_key(source))
    lines, _, crc = (value or "").partition(" ")
    return int(crc, 16) if lines == str(start) and crc else None


MAX_SOURCE_LEN = 500
"""The width of the `source` columns (positions, dead letters)."""


def source_name(path: str) -> str:
    """Stable source identity for positions: 'file:' and the absolute path (a path too long for the column is cut
    and ends with a hash of the whole), or 'stdin'."""
    if path == "-":
        return "stdin"
    name = "file:" + os.path.abspath(path)
    if len(name) > MAX_SOURCE_LEN:
        name = name[:MAX_SOURCE_LEN - 17] + "#" + hashlib.sha256(name.encode()).hexdigest()[:16]
    return name


def _records(fh: IO[bytes], source: str, start: int, failure: list[BaseException], held: list[int],
             last: list[int], limits: Limits, crc: list[int]) -> Iterator[list[RawRecord]]:
    """Records from line `start` on, a block of lines at a time; `last[0]` follows the last line number read (lines
    before `start` too) and `crc[0]` is the `line_sum` of the lines before `start` read so far (all of them when the
    first record is yielded). A decompression error ends them and is appended to `failure`. A last line without newline
    that is not valid JSON is held back (its number appended to `held`): it is probably still being written, and
    dead-lettering it would move the position past it for good. Not on stdin: it has no stored position, so no
    later run could take the line up; it is dead-lettered (invalid_json) like any other line that is not JSON."""

    def complete(lineno: int, payload: bytes) -> bool:
        d = decode(payload, source, 0, lineno, None, limits)
        if isinstance(d, DeadLetter) and d.reason == "invalid_json":
            held.append(lineno)
            return False
        return True

    try:
        hold = None if source == "stdin" else complete
        for numbers, payloads in json_line_blocks(fh, hold, limits.max_event_bytes):
            if not payloads:
                continue
            last[0] = numbers[-1]
            if numbers[0] < start:
                skip = bisect_left(numbers, start)
                crc[0] = line_sum(payloads[:skip], crc[0])
                numbers, payloads = numbers[skip:], payloads[skip:]
                if not payloads:
                    continue
            yield list(map(RawRecord, repeat(source), repeat(0), numbers, payloads))
    except CORRUPT as err:
        failure.append(err)


_COMPRESSED: tuple[tuple[bytes, Callable[..., Any]], ...] = (
    (b"\x1f\x8b", gzip.open), (b"BZh", bz2.open), (b"\xfd7zXZ\x00", lzma.open))
"""Magic bytes of gzip, bzip2 and xz, and their openers: compressed exports replay as they are."""
CORRUPT = (EOFError, OSError, zlib.error, lzma.LZMAError)
"""What reading a truncated or damaged compressed file raises (gzip.BadGzipFile is an OSError)."""


@contextmanager
def open_events(path: str) -> Iterator[tuple[IO[bytes], Callable[[], int]]]:
    """The event lines of a file or '-' (stdin), decompressed when gzip, bzip2 or xz (told by their magic bytes,
    not the name), and a function giving the position reached in the bytes read (for progress bars)."""
    if path == "-" and sys.stdin is None:  # started with stdin closed (`<&-`): was "unexpected AttributeError"
        raise ConfigError("standard input is closed, so there is nothing to read from '-': pipe the events in "
                          "(`cat events.jsonl | driftline …`) or give the file's path")
    raw: IO[bytes] = sys.stdin.buffer if path == "-" else open(path, "rb")
    try:
        peek = getattr(raw, "peek", None)
        if path == "-":
            head = peek(8)[:8] if peek else b""
        else:
            head = raw.read(8)
            raw.seek(0)
        position: Callable[[], int] = (lambda: 0) if path == "-" else raw.tell
        wide = wide_encoding(head)
        if wide is not None:  # every line was an invalid_json dead letter whose detail
            # read "invalid character at byte offset 0 near \xff\xfe{\x00"\x00t…"
            name = "standard input" if path == "-" else path
            raise ConfigError(f"{name} is {wide[0]} text ({wide[1]}); events are UTF-8 JSON lines: convert it, e.g. "
                              f"`iconv -f {wide[0]} -t UTF-8 {'FILE' if path == '-' else shell_word(path)} > "
                              "events.jsonl`, and replay that (nothing was stored)")
        for magic, opener in _COMPRESSED:
            if head.startswith(magic):
                with opener(raw, "rb") as fh:
                    yield fh, position
                return
        yield raw, position
    finally:
        if path != "-":
            raw.close()


def head_fingerprint(path: str) -> str | None:
    """SHA-256 of the file's first JSON line (empty for a file without one; None when a damaged compressed file
    yields no line to tell it by, as a bzip2 file cut inside its first block)."""
    with open_events(path) as (fh, _):
        try:
            for _, payload in json_lines(fh):
                return hashlib.sha256(payload).hexdigest()
        except CORRUPT:  # damaged before its first line: nothing to recognise it by
            return None
    return ""


BLOCKS_NOTE = ("; bzip2 decompresses whole blocks of up to 900 kB of lines, so no line of the block that was cut "
               "could be read")
"""Why a cut bzip2 file yields fewer lines than the same gzip or xz file cut at the same place (or none)."""


RERUN_STDIN = ("standard input has no stored position: a re-run reads it from its first line again and counts the "
               "events already stored as duplicates")
"""What a re-run of stdin does, told wherever a replay of it stops early (never "a re-run resumes there")."""


def unreadable(path: str, read: int, start: int, err: BaseException, whole_blocks: bool) -> str:
    """What a truncated or damaged compressed file let replay read, as it is: the line after which it became
    unreadable (`read` lines of it were read; `start`: where this run began), what is stored and what a re-run
    does. A bzip2 file cut inside its first block yields no line at all: the message says so, not "after line 0"."""
    blocks = BLOCKS_NOTE if whole_blocks else ""
    where = f"after line {read:,}" if read else "before its first line"
    if path == "-":  # no stored position: a re-run starts over
        kept = f"lines 1 to {read:,} are stored; {RERUN_STDIN}" if read else "nothing stored"
        return f"stdin: unreadable {where} ({kept}{blocks}): {err}"
    if read < start:  # ends before the position an earlier replay of this path (a longer copy) reached
        return (f"{path}: unreadable {where}: it ends before line {start + 1:,}, where the replays of this path had "
                f"got to (nothing new stored; a re-run resumes at line {start + 1:,}{blocks}): {err}")
    if not read:
        return f"{path}: unreadable {where} (nothing stored{blocks}): {err}"
    return f"{path}: unreadable {where} (the lines before it are stored; a re-run resumes there{blocks}): {err}"


def resume_point(pipeline: Pipeline, path: str) -> tuple[int, str | None]:
    """(line to resume at, why the stored position was not used, or None) for a file; stdin always starts at 0.
    A file whose first line changed is a new file: it starts at 0."""
    if path == "-":
        return 0, None
    source = source_name(path)
    stored = pipeline.store.positions(source).get(0, 0)
    if stored == 0:
        return 0, None
    known, head = pipeline.store.meta(fingerprint_key(source)), head_fingerprint(path)
    if known is not None and head is not None and known != head:  # unreadable: not "changed", replay says why
        return 0, (f"{path}: its first line changed since it was replayed up to line {stored:,}: replaying it from "
                   "the start (events already stored count as duplicates)")
    return stored, None  # a file now shorter than `stored` is noticed while replay skips to it


def replay(pipeline: Pipeline, path: str, on_batch: Callable[[BatchResult, int], None] | None = None,
           batch_size: int | Callable[[], int] = BATCH, start: int | None = None, rewind: bool = False,
           tick: Tick | None = None) -> ReplayResult:
    """Ingest a file (or '-' for stdin); a file already replayed resumes after its stored position (see
    `resume_point`; `start` overrides it). A file that ends before `start` is shorter than the one measured: it is
    replayed from its start and `restarted` says so. `rewind`: `start` is deliberately below the stored position
    (a new file at the path): the first batch moves it back; otherwise lines another replay of the same path
    stored meanwhile are skipped (Pipeline._fence_files). `batch_size` may be a function giving each batch's size
    when it starts (a progress display starts with small batches; see commands/progress.py), and `tick` is told how
    far each batch got (pipeline.Tick)."""
    size_of: Callable[[], int] = batch_size if callable(batch_size) else (lambda: batch_size)  # type: ignore[misc]
    source = source_name(path)
    if start is None:
        start, why = resume_point(pipeline, path)
        rewind = why is not None
    meta = None if path == "-" else {fingerprint_key(source): head_fingerprint(path) or ""}
    expected = None if path == "-" or rewind or start == 0 else stored_sum(pipeline, source, start)
    changed = False
    total = ReplayResult()
    failure: list[BaseException] = []
    held: list[int] = []
    last = [-1]
    crc = [0]  # line_sum of the lines read so far: those skipped before `start`, then each batch's
    stored_to = [0]  # lines stored by the batches committed so far (the line number reached: stdin from its first)

    def process(batch: list[RawRecord], rewind: bool) -> BatchResult:
        """One batch stored, with the sum of the file's lines up to its end; the database failing mid-stdin says
        what the batches before stored (user tryout: "nothing written; run again" after 5,436 lines of stdin were
        stored)."""
        summed = None
        if path != "-":
            crc[0] = line_sum(list(map(_PAYLOAD, batch)), crc[0])
            summed = {sum_key(source): f"{batch[-1].offset + 1} {crc[0]:08x}"}
        try:
            res = pipeline.process_isolating(batch, meta, rewind, tick, summed)
        except StoreUnavailable as err:
            if path == "-" and stored_to[0]:
                again = type(err)(f"{err}; stdin: the batches before stored lines 1 to {stored_to[0]:,}; "
                                  f"{RERUN_STDIN}")
            elif path == "-":
                raise
            else:  # SRE tryout: a file's replay stopped by a database restart said nothing of what it had stored
                again = type(err)(f"{err}; {path}: " + (
                    f"this replay stored lines {start + 1:,} to {stored_to[0]:,}" if stored_to[0] > start
                    else "this replay stored nothing") + f"; a re-run resumes at line {max(stored_to[0], start) + 1:,}")
            again.stored = total  # what the batches before stored (replay --json)
            raise again from err
        stored_to[0] = batch[-1].offset + 1
        return res

    with open_events(path) as (fh, position):
        whole_blocks = isinstance(fh, bz2.BZ2File)
        batch: list[RawRecord] = []
        size = 0
        limit = size_of()
        for chunk in _records(fh, source, start, failure, held, last, pipeline.limits, crc):
            if expected is not None:  # every line before `start` is summed: are they the lines stored?
                if crc[0] != expected:
                    changed = True
                    break
                expected = None
            ends = list(accumulate(map(len, map(_PAYLOAD, chunk))))  # payload bytes up to each record
            pos = 0
            while pos < len(chunk):  # a batch ends at the record that brings it to `limit` or BATCH_BYTES
                before = ends[pos - 1] if pos else 0
                crossing = bisect_left(ends, BATCH_BYTES - size + before, pos)
                take = min(max(1, limit - len(batch)), crossing - pos + 1, len(chunk) - pos)
                batch += chunk[pos:pos + take]
                size += ends[pos + take - 1] - before
                pos += take
                if len(batch) >= limit or size >= BATCH_BYTES:
                    res = process(batch, rewind)
                    rewind = False
                    total.add(res)
                    if on_batch:
                        on_batch(res, position())
                    batch, size, limit = [], 0, size_of()
        if expected is not None and not failure and last[0] + 1 >= start and crc[0] != expected:
            changed = True  # nothing after `start`, but the lines before it changed (a same-length replacement)
        if batch:
            res = process(batch, rewind)
            total.add(res)
            if on_batch:
                on_batch(res, position())
    if failure:  # a truncated or damaged compressed file: what was read is stored, then the reader says so
        total.unreadable = unreadable(path, last[0] + 1, start, failure[0], whole_blocks)
        return total
    if start > 0 and last[0] + 1 < start:  # nothing read past the position: the file is shorter than it was
        again = replay(pipeline, path, on_batch, batch_size, 0, rewind=True, tick=tick)
        again.restarted = (f"{path}: now shorter than the {start:,} lines already replayed: replaying it from the "
                           "start (events already stored count as duplicates)")
        return again
    if changed:
        again = replay(pipeline, path, on_batch, batch_size, 0, rewind=True, tick=tick)
        again.restarted = (f"{path}: its lines 1 to {start:,} changed since they were replayed (a new file at the "
                           "same path?): replaying it from the start (events already stored count as duplicates)")
        return again
    total.held_back = held[0] if held and held[0] >= start else None
    return total
