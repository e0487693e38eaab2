"""A truncated compressed file or stream says where it ended and what a re-run does, whatever its format (hostile
tryout: a cut `.bz2` said "unreadable after line 0 (the lines before it are stored ...)", a cut copy over a
replayed path named the old position as the line it ended after, and stdin promised "a re-run resumes there")."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import sys
import zlib

from driftline.cli import main

from helpers import pred

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
BLOCKS = "bzip2 decompresses whole blocks of up to 900 kB of lines, so no line of the block that was cut could be read"


def _lines(n: int) -> bytes:
    return b"\n".join(pred(f"cut-{i}", 0.3, T0 + i) for i in range(n)) + b"\n"


def _whole_lines(data: bytes, decompressor: object) -> int:
    """Complete lines a streaming decompressor gets out of `data` (what any reader of the cut file can have)."""
    return decompressor.decompress(data).count(b"\n")  # type: ignore[attr-defined]


def _replay(capsys, db: list[str], path: str, *, code: int = 2) -> tuple[dict, str]:
    assert main([*db, "replay", path, "--json"]) == code
    out, err = capsys.readouterr()
    return json.loads(out), " ".join(err.split())


def _stdin(monkeypatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(data))))  # type: ignore[arg-type]


def test_a_bz2_cut_inside_its_first_block_says_nothing_could_be_read(tmp_path, capsys) -> None:
    data = bz2.compress(_lines(300))
    path = tmp_path / "cut.jsonl.bz2"
    path.write_bytes(data[:-100])  # the same cut of the gzip file keeps all but the last lines
    doc, err = _replay(capsys, ["--db", f"sqlite:///{tmp_path / 'd.db'}"], str(path))
    assert doc["records"] == 0 and "after line 0" not in err
    assert doc["error"].startswith(f"{path}: unreadable before its first line (nothing stored; {BLOCKS}): ")
    assert f"error: {doc['error']}" == err


def test_a_bz2_cut_after_whole_blocks_names_the_last_line_it_read(tmp_path, capsys) -> None:
    data = bz2.compress(_lines(3000), compresslevel=1)  # blocks of 100 kB: several in 600 kB of lines
    cut = data[: len(data) * 6 // 10]
    readable = _whole_lines(cut, bz2.BZ2Decompressor())
    assert 0 < readable < 3000
    path = tmp_path / "cut.jsonl.bz2"
    path.write_bytes(cut)
    doc, err = _replay(capsys, ["--db", f"sqlite:///{tmp_path / 'd.db'}"], str(path))
    assert doc["records"] == doc["accepted"] == readable
    assert doc["error"].startswith(f"{path}: unreadable after line {readable:,} (the lines before it are stored; "
                                   f"a re-run resumes there; {BLOCKS}): ")


def test_a_cut_copy_over_a_replayed_path_names_the_line_it_ends_after(tmp_path, capsys) -> None:
    """A whole file replayed, then a cut copy at the same path: it ends before the stored position."""
    db = ["--db", f"sqlite:///{tmp_path / 'd.db'}"]
    whole = gzip.compress(_lines(3000))
    path = tmp_path / "export.jsonl.gz"
    path.write_bytes(whole)
    assert _replay(capsys, db, str(path), code=0)[0]["accepted"] == 3000
    cut = whole[: len(whole) // 2]
    readable = _whole_lines(cut, zlib.decompressobj(31))
    path.write_bytes(cut)
    doc, err = _replay(capsys, db, str(path))
    assert doc["records"] == 0 and "after line 3,000" not in doc["error"]
    assert "resumed at line" not in err  # tryout: a note claimed the resume its error then denied
    assert doc["error"].startswith(f"{path}: unreadable after line {readable:,}: it ends before line 3,001, where "
                                   "the replays of this path had got to (nothing new stored; a re-run resumes at "
                                   "line 3,001): ")
    bz = bz2.compress(_lines(3000))
    path.write_bytes(bz[:1000])  # nothing readable: not "its first line changed", nor "after line 3,000"
    doc, err = _replay(capsys, db, str(path))
    assert "first line changed" not in err and doc["records"] == 0
    assert doc["error"].startswith(f"{path}: unreadable before its first line: it ends before line 3,001, where ")
    path.write_bytes(whole)  # the whole file again: nothing new, nothing counted twice
    doc, err = _replay(capsys, db, str(path), code=0)
    assert (doc["records"], doc["duplicates"], doc["error"]) == (0, 0, None)


def test_a_cut_stream_on_stdin_says_a_rerun_starts_over(tmp_path, capsys, monkeypatch) -> None:
    """stdin has no stored position: a re-run of it reads every line again (they count as duplicates)."""
    db = ["--db", f"sqlite:///{tmp_path / 'd.db'}"]
    whole = gzip.compress(_lines(2000))
    cut = whole[: len(whole) // 2]
    readable = _whole_lines(cut, zlib.decompressobj(31))
    for run in range(2):
        _stdin(monkeypatch, cut)
        doc, err = _replay(capsys, db, "-")
        assert "resumes" not in err
        assert doc["error"].startswith(f"stdin: unreadable after line {readable:,} (lines 1 to {readable:,} are "
                                       "stored; standard input has no stored position: a re-run reads it from its "
                                       "first line again and counts the events already stored as duplicates): ")
        assert (doc["records"], doc["duplicates"]) == (readable, readable * run)  # what the message promised


def test_a_stdin_stream_cut_mid_line_dead_letters_the_cut_line(tmp_path, capsys, monkeypatch) -> None:
    """On a file the cut last line is left for the next run; stdin has no next run to leave it to (it said "left
    for the next replay, not dead-lettered", and the line was in fact dropped: neither stored nor dead-lettered)."""
    db = ["--db", f"sqlite:///{tmp_path / 'd.db'}"]
    _stdin(monkeypatch, _lines(3) + pred("cut-3", 0.3, T0 + 3)[:50])
    doc, err = _replay(capsys, db, "-", code=0)
    assert "next replay" not in err and doc["held_back_line"] is None
    assert (doc["records"], doc["accepted"], doc["dead_lettered"]) == (4, 3, 1)
    assert main([*db, "dead-letters", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["totals"] == {"invalid_json": 1}


def test_the_database_failing_mid_stdin_says_what_a_rerun_does(tmp_path, capsys, monkeypatch) -> None:
    """User tryout: the write lock held by another writer after 5,400 lines of stdin were stored said only
    "(nothing written; run again when it is done)"."""
    _locked_from(monkeypatch, 3)  # the third batch finds the write lock held
    _stdin(monkeypatch, _lines(300))
    assert main(["--db", f"sqlite:///{tmp_path / 'd.db'}", "replay", "-", "--batch-size", "100"]) == 3
    err = " ".join(capsys.readouterr().err.split())
    assert err.endswith("(nothing written; run again when it is done); stdin: the batches before stored lines 1 to "
                        "200; standard input has no stored position: a re-run reads it from its first line again "
                        "and counts the events already stored as duplicates")


def _locked_from(monkeypatch, n: int) -> None:
    """Every batch from the n-th on finds the write lock held by another writer."""
    from driftline.ingest.pipeline import Pipeline
    from driftline.storage.errors import WriteLocked

    real, calls = Pipeline.process_isolating, []

    def locked(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) >= n:
            raise WriteLocked("another driftline writer held the database write lock for more than 30s "
                              "(nothing written; run again when it is done)")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Pipeline, "process_isolating", locked)


def test_the_database_failing_mid_file_says_what_was_stored_and_where_a_rerun_resumes(tmp_path, capsys,
                                                                                        monkeypatch) -> None:
    """SRE tryout: `replay FILE` stopped by a PostgreSQL restart said only `database unavailable: … the connection is
    lost`, and with `--json` printed nothing on stdout: neither what was stored nor where a re-run goes on."""
    path, db = tmp_path / "e.jsonl", f"sqlite:///{tmp_path / 'd.db'}"
    path.write_bytes(_lines(300))
    with monkeypatch.context() as m:
        _locked_from(m, 3)
        assert main(["--db", db, "replay", str(path), "--batch-size", "100", "--json"]) == 3
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc["records"] == 200 and doc["predictions"] + doc["outcomes"] == 200 and doc["error"].startswith(
        "database unavailable: another driftline writer held")
    assert " ".join(err.split()).endswith(f"(nothing written; run again when it is done); {path}: this replay stored "
                                          "lines 1 to 200; a re-run resumes at line 201")
    with monkeypatch.context() as m:  # the re-run stops at its first batch: nothing more stored
        _locked_from(m, 1)
        assert main(["--db", db, "replay", str(path), "--batch-size", "100"]) == 3
    assert " ".join(capsys.readouterr().err.split()).endswith(
        f"{path}: this replay stored nothing; a re-run resumes at line 201")
    assert main(["--db", db, "replay", str(path), "--batch-size", "100", "--json"]) == 0  # and it does
    assert json.loads(capsys.readouterr().out)["records"] == 100


def test_the_error_of_a_cut_file_is_one_line_at_80_columns(tmp_path, capsys, monkeypatch) -> None:
    """It was wrapped into four lines on a narrow stderr; errors are one line (`fail` in cli.py never wraps)."""
    monkeypatch.setenv("COLUMNS", "80")
    whole = gzip.compress(_lines(300))
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(whole[:-100])
    assert main(["--db", f"sqlite:///{tmp_path / 'd.db'}", "replay", str(path)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}: unreadable after line ") and len(lines[0]) > 80
