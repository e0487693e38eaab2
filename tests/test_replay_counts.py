"""Every count of the replay summary adds up for a hostile file (blank lines, duplicates, a BOM, CRLF, a 2 MB line,
invalid UTF-8), read from a file, gzip or stdin alike; the table shows counts only (it showed the 0-based index of
a held-back line as "held back line 3" under the note "line 4 has no newline ...")."""

from __future__ import annotations

import gzip
import io
import json
import sys

from driftline.cli import main

from helpers import pred

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def _hostile() -> bytes:
    """60 lines: 4 blank, 56 events of which 50 distinct predictions, 3 copies, and 3 that are no event."""
    ps = [pred(f"h-{i}", 0.3, T0 + i) for i in range(50)]
    big = pred("big", 0.3, T0)[:-1] + b',"pad":"' + b"x" * (2 << 20) + b'"}'
    out = b"\xef\xbb\xbf" + ps[0] + b"\r\n" + b"\n\n   \n\t\r\n"
    out += b"".join(p + b"\r\n" for p in ps[1:20]) + ps[5] + b"\n" + ps[5] + b"\n"
    out += big + b"\n" + ps[30].replace(b"h-30", b"h-\xff\xfe") + b"\n" + b"\xff{not json\n"
    return out + b"".join(p + b"\n" for p in ps[20:50]) + ps[49] + b"\n"


def _json(capsys, argv: list[str]) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_summary_of_a_hostile_file_adds_up(tmp_path, capsys, monkeypatch) -> None:
    data = _hostile()
    plain, packed = tmp_path / "h.jsonl", tmp_path / "h.jsonl.gz"
    plain.write_bytes(data)
    packed.write_bytes(gzip.compress(data))
    docs = [_json(capsys, ["--db", f"sqlite:///{tmp_path / 'a.db'}", "replay", str(plain)]),
            _json(capsys, ["--db", f"sqlite:///{tmp_path / 'b.db'}", "replay", str(packed)])]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(data))))  # type: ignore[arg-type]
    docs.append(_json(capsys, ["--db", f"sqlite:///{tmp_path / 'c.db'}", "replay", "-"]))
    for doc in docs:
        assert doc["records"] == doc["accepted"] + doc["dead_lettered"] + doc["already_stored"] == 56
        assert (doc["accepted"], doc["dead_lettered"], doc["duplicates"]) == (53, 3, 3)
        assert (doc["predictions"] + doc["duplicate_predictions"] + doc["outcomes"] + doc["duplicate_outcomes"]
                + doc["stale_outcomes"]) == doc["accepted"]
        assert doc["predictions"] == 50 and doc["duplicate_predictions"] == 3  # stored once, copies apart
    assert main(["--db", f"sqlite:///{tmp_path / 'a.db'}", "dead-letters", "--json"]) == 0
    letters = json.loads(capsys.readouterr().out)
    assert letters["totals"] == {"too_large": 1, "invalid_json": 2}
    assert sorted(r["offset"] for r in letters["recent"]) == [26, 27, 28]  # lines 27-29: blank lines counted
    again = _json(capsys, ["--db", f"sqlite:///{tmp_path / 'a.db'}", "replay", str(plain)])
    assert again["records"] == 0  # resumed at its end


def test_the_summary_table_shows_counts_only(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    path = tmp_path / "growing.jsonl"
    path.write_bytes(b"".join(pred(f"g-{i}", 0.3, T0 + i) + b"\n" for i in range(3)) + pred("g-3", 0.3, T0)[:40])
    assert main(["--db", f"sqlite:///{tmp_path / 'd.db'}", "replay", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "line 4 has no newline" in " ".join(err.split())
    assert "held back" not in out and "records" in out
