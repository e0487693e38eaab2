"""The block reader of JSON lines (core/lines.py) and replay's batching of its blocks give exactly what the
line-at-a-time reference gives: line numbers, payloads, the unterminated last line's fate, oversized lines, and
the same batches."""

from __future__ import annotations

import gzip
import io
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import driftline.core.lines as lines
import driftline.ingest.replay as replay_mod
from driftline.core.limits import Limits
from driftline.core.lines import UTF8_BOM, _by_readline, json_line_blocks, json_lines
from driftline.ingest.pipeline import BatchResult

pieces = st.sampled_from([b"\n", b"\r\n", b"\r", b" ", b"\t", b"\x0b", b"\x0c", UTF8_BOM, b"{", b"}", b'"x"', b"a",
                          b'{"a":1}', b"not json", b"\xe9"])
line_text = st.one_of(st.lists(pieces, max_size=6).map(b"".join), st.integers(0, 70).map(lambda n: b"z" * n))


def _both(data: bytes, max_bytes: int, keep_answer: bool | None):
    """(reference, block reader) results: the lines yielded and the keep_unterminated calls of each."""
    results = []
    for reader in ("ref", "blocks"):
        calls: list[tuple[int, bytes]] = []

        def keep(lineno: int, payload: bytes) -> bool:
            calls.append((lineno, payload))
            return bool(keep_answer)

        cb = None if keep_answer is None else keep
        fh = io.BufferedReader(io.BytesIO(data), buffer_size=16)  # type: ignore[arg-type]
        got = (list(_by_readline(fh, cb, max_bytes)) if reader == "ref"
               else [(n, p) for ns, ps in json_line_blocks(fh, cb, max_bytes) for n, p in zip(ns, ps)])
        results.append((got, calls))
    return results


@settings(max_examples=400, deadline=None)
@given(st.lists(line_text, max_size=25), st.sampled_from([b"", b"\n", b"\r\n"]), st.booleans(),
       st.integers(0, 40), st.sampled_from([1, 2, 3, 7, 16, 64, 1 << 20]), st.sampled_from([None, True, False]))
def test_blocks_equal_readline(texts, end, bom, max_bytes, block, keep_answer):
    data = (UTF8_BOM if bom else b"") + b"\n".join(texts) + end
    saved = lines.BLOCK
    lines.BLOCK = block
    try:
        ref, got = _both(data, max_bytes, keep_answer)
    finally:
        lines.BLOCK = saved
    assert got == ref


@pytest.mark.parametrize("block", [5, 64, 1 << 20])
def test_oversized_lines_and_blank_lines(block, monkeypatch):
    monkeypatch.setattr(lines, "BLOCK", block)
    data = (UTF8_BOM + b"  " + b"x" * 30 + b"\r\n\n\n" + b"y" * 12 + b"\n" + b"w" * 11 + b"\r\n" + b"q" * 100
            + b"\n \t\n" + b"z" * 31)  # the last line is oversized and has no newline: yielded as it is
    for max_bytes in (9, 10, 11, 12, 40):
        for keep in (None, True, False):
            ref, got = _both(data, max_bytes, keep)
            assert got == ref


def test_bom_only_on_the_first_line_and_crlf_stripped():
    data = UTF8_BOM + b' {"a":1}\r\n\r\n' + UTF8_BOM + b'{"b":2}\r\n'
    assert list(json_lines(io.BytesIO(data))) == [(0, b'{"a":1}'), (2, UTF8_BOM + b'{"b":2}')]


def test_compressed_streams_read_line_by_line():
    data = b'{"a":1}\n\n{"b":2}\n{"c"'
    fh = gzip.GzipFile(fileobj=io.BytesIO(gzip.compress(data)))
    assert list(json_lines(fh, lambda n, p: False)) == [(0, b'{"a":1}'), (2, b'{"b":2}')]


@dataclass
class FakePipeline:
    """Records the batches replay hands over."""

    limits: Limits = field(default_factory=Limits)
    batches: list[tuple[list[int], bool]] = field(default_factory=list)

    def process_isolating(self, batch, meta, rewind, tick, position_meta=None):  # noqa: ANN001, ANN201 - as Pipeline's
        self.batches.append(([r.offset for r in batch], rewind))
        return BatchResult()


def _reference_batches(path: str, start: int, sizes: list[int], batch_bytes: int) -> list[list[int]]:
    """The batches of the line-at-a-time replay loop: cut after the record that reaches the size or the bytes."""
    out: list[list[int]] = []
    with open(path, "rb") as fh:
        batch: list[int] = []
        size, limit, k = 0, sizes[0], 1
        for lineno, payload in _by_readline(fh, lambda n, p: True, Limits().max_event_bytes):
            if lineno < start:
                continue
            batch.append(lineno)
            size += len(payload)
            if len(batch) >= limit or size >= batch_bytes:
                out.append(batch)
                batch, size, limit, k = [], 0, sizes[min(k, len(sizes) - 1)], k + 1
        if batch:
            out.append(batch)
    return out


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 30), max_size=300), st.lists(st.integers(0, 7), min_size=1, max_size=6),
       st.integers(1, 200), st.integers(0, 40), st.sampled_from([3, 50, 1 << 20]))
def test_replay_batches_equal_the_line_at_a_time_loop(tmp_path_factory, widths, sizes, batch_bytes, start, block):
    path = tmp_path_factory.mktemp("lines") / "events.jsonl"
    path.write_bytes(b"".join(b"x" * w + b"\n" for w in widths))
    if not any(widths[start - 1:]):  # the file ends before `start`: replay would start it over (not this test)
        start = 0
    saved = lines.BLOCK, replay_mod.BATCH_BYTES
    lines.BLOCK, replay_mod.BATCH_BYTES = block, batch_bytes
    try:
        fake = FakePipeline()
        calls = iter(range(10 ** 6))
        replay_mod.replay(fake, str(path), None, lambda: sizes[min(next(calls), len(sizes) - 1)],  # type: ignore
                          start=start, rewind=True)
    finally:
        lines.BLOCK, replay_mod.BATCH_BYTES = saved
    want = _reference_batches(str(path), start, sizes, batch_bytes)
    assert [b for b, _ in fake.batches] == want
    assert [r for _, r in fake.batches] == [i == 0 for i in range(len(want))]
