"""The people-facing CLI output of issue 2: `replay`'s summary (file and stdin) and `metrics`' readable tables.

The numbers in the tables are checked against scipy's Wilson intervals on the seeds' worked example
(tp 8, fn 2, fp 6, tn 84), formatted as a person reads them: value [low, high] n=…, * when indicative.
"""

from __future__ import annotations

import io
import json
import re
import sys

import pytest
from scipy.stats import binomtest

from driftline.cli import main

from helpers import outcome, pred

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def _stream() -> bytes:
    """The worked example under variant A (8 tp, 2 fn, 6 fp, 84 tn), 30 unlabelled flagged predictions under
    variant B, one duplicate prediction, two malformed events and a blank line."""
    cells = [(1, 0.9)] * 8 + [(1, 0.1)] * 2 + [(0, 0.8)] * 6 + [(0, 0.2)] * 84
    lines = [pred(f"a{i}", s, T0 + i) for i, (_, s) in enumerate(cells)]
    lines += [outcome(f"a{i}", y, T0 + 3600 + i) for i, (y, _) in enumerate(cells)]
    lines += [pred(f"b{i}", 0.7, T0 + i, variant="B") for i in range(30)]
    lines += [pred("a0", 0.9, T0), b"{not json", pred("bad", 1.5, T0), b""]
    return b"\n".join(lines) + b"\n"


def _wilson(k: int, n: int) -> str:
    ci = binomtest(k, n).proportion_ci(method="wilson")
    star = "*" if n < 30 else ""
    return f"{k / n:.3f} [{ci.low:.3f}, {ci.high:.3f}] n={n}{star}"


def _row(out: str, name: str) -> str:
    """The table line whose first cell is `name`."""
    for line in out.splitlines():
        cells = [c.strip() for c in re.split(r"[│┃|]", line) if c.strip()]
        if cells and cells[0] == name:
            return line
    raise AssertionError(f"no row {name!r} in:\n{out}")


@pytest.fixture(params=["sqlite", "postgres"])
def db(request, tmp_path) -> list[str]:
    """--db of a fresh SQLite file or PostgreSQL database: the file-replay tests run on both stores."""
    url = f"sqlite:///{tmp_path / 'd.db'}" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    return ["--db", url]


@pytest.fixture
def wide(monkeypatch):
    monkeypatch.setenv("COLUMNS", "220")  # rich reads it when stdout is not a terminal: no wrapped cells


def test_replay_summary_counts_accepted_dead_and_duplicates(tmp_path, capsys, wide) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(_stream())
    db = ["--db", f"sqlite:///{tmp_path / 'd.db'}"]
    assert main([*db, "replay", str(path)]) == 0
    out = capsys.readouterr().out
    for name, value in (("records", 233), ("accepted", 231), ("dead lettered", 2), ("duplicates", 1),
                        ("predictions stored", 130), ("duplicate predictions", 1), ("outcomes stored", 100),
                        ("duplicate outcomes", 0)):
        assert re.search(rf"\b{value}\b", _row(out, name)), (name, out)
    assert "`driftline dead-letters` shows why" in out
    assert main([*db, "dead-letters"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"\b1\b", _row(out, "invalid_json")) and re.search(r"\b1\b", _row(out, "score_out_of_range"))


def test_a_stream_replayed_twice_over_counts_each_prediction_stored_once(tmp_path, capsys, monkeypatch) -> None:
    """User tryout: `cat f f | driftline replay -` said twice the predictions (and outcomes) the database held,
    the copies counted both as predictions and as duplicates."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(_stream() * 2)))
    assert main(["--db", f"sqlite:///{tmp_path / 'd.db'}", "replay", "-", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["predictions"], doc["duplicate_predictions"]) == (130, 132)  # 131 lines, one a copy, twice
    assert (doc["outcomes"], doc["duplicate_outcomes"], doc["duplicates"]) == (100, 100, 232)
    assert doc["predictions"] + doc["duplicate_predictions"] + doc["outcomes"] + doc["duplicate_outcomes"] \
        + doc["stale_outcomes"] == doc["accepted"]


def test_replay_from_stdin_matches_the_file(tmp_path, capsys, monkeypatch) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(_stream())
    assert main(["--db", f"sqlite:///{tmp_path / 'file.db'}", "replay", str(path), "--json"]) == 0
    from_file = capsys.readouterr().out
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(_stream())))
    assert main(["--db", f"sqlite:///{tmp_path / 'stdin.db'}", "replay", "-", "--json"]) == 0
    assert capsys.readouterr().out == from_file


def test_replay_of_a_missing_file_or_a_directory_is_an_error(tmp_path, capsys) -> None:
    assert main(["--db", f"sqlite:///{tmp_path / 'd.db'}", "replay", str(tmp_path / "nope.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["--db", f"sqlite:///{tmp_path / 'd.db'}", "replay", str(tmp_path)]) == 2
    assert "not a file" in capsys.readouterr().err


def test_metrics_table_shows_rates_intervals_and_counts(tmp_path, capsys, wide) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(_stream())
    db = ["--db", f"sqlite:///{tmp_path / 'd.db'}"]
    assert main([*db, "replay", str(path), "--json"]) == 0
    capsys.readouterr()
    assert main([*db, "metrics", "--window", "7d"]) == 0
    out = capsys.readouterr().out
    expected = {
        "recall": (_wilson(8, 10), "tp=8 of positives=10"),
        "FPR": (_wilson(6, 90), "fp=6 of negatives=90"),  # tables name metrics as every command does
        "precision": (_wilson(8, 14), "tp=8 of flagged labelled=14"),
        "accuracy": (_wilson(92, 100), "tp+tn=92 of labelled=100"),
        "alert rate": (_wilson(44, 130), "flagged=44 of predictions=130"),
        "label coverage": (_wilson(100, 130), "labelled=100 of predictions=130"),
    }
    for name, (rate, counts) in expected.items():
        row = _row(out, name)
        assert rate in row and counts in row, (name, row)
    assert "0.800 [0.490, 0.943] n=10*" in out  # the seeds' recall, indicative (n < 30)
    assert "* indicative: fewer than 30 cases" in out
    scores = out[out.index("threshold-free scores"):out.index("by variant")]
    assert re.search(r"│\s*0\.667\s*│", scores)  # the seeds' F1 of 8/2/6/84 (3 places: a proportion)
    by_variant = out[out.index("by variant"):]
    assert re.search(r"\bA\b.*\b100\b", _row(by_variant, "A")) and re.search(r"\b30\b", _row(by_variant, "B"))
    assert "— (n=0)" in _row(by_variant, "B")  # B has no labels: its recall is null, shown as a dash

    assert main([*db, "metrics", "--window", "7d", "--variant", "A"]) == 0
    only_a = capsys.readouterr().out
    assert _wilson(14, 100) in _row(only_a, "alert rate") and "by variant" not in only_a


def _empty_db(tmp_path) -> str:
    """URL of an existing database holding nothing (replayed from an empty file): a read-only command refuses a
    SQLite file that does not exist (test_cli_errors.py), so an empty database is made by a writer first."""
    (tmp_path / "none.jsonl").write_bytes(b"")
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    assert main(["--db", url, "replay", str(tmp_path / "none.jsonl")]) == 0
    return url


def test_metrics_on_an_empty_database_says_what_to_do(tmp_path, capsys) -> None:
    assert main(["--db", _empty_db(tmp_path), "metrics"]) == 0
    out = capsys.readouterr().out
    assert "no predictions stored yet" in out and "driftline replay" in out


@pytest.mark.parametrize("url", ["postgresql://127.0.0.1:1/test"])
def test_an_unreachable_database_is_a_one_line_error(url, capsys) -> None:
    """Exit status 3 and one readable line naming the problem, not a driver traceback (a SQLite 'file' that is a
    folder is a wrong path, exit 2 since the second tryout: test_existing_db.py; a SQLite file whose folder is
    missing is refused before, exit 2: test_cli_errors.py)."""
    assert main(["--db", url, "metrics"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("database unavailable:") and "Traceback" not in err
    assert "Connection refused" in err or "connection failed" in err


def test_a_bad_config_names_the_field(tmp_path, capsys) -> None:
    cfg = tmp_path / "driftline.yaml"
    cfg.write_text("threshold: 2\n")
    assert main(["--config", str(cfg), "metrics"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: config ") and "threshold" in err


def test_notes_with_brackets_are_printed_as_written(tmp_path, capsys, wide) -> None:
    """Rich markup must not swallow text from documents, e.g. the slices hint's `[country, channel]`."""
    url = _empty_db(tmp_path)
    assert main(["--db", url, "slices"]) == 0
    assert "`slices: [country, channel]`" in capsys.readouterr().out
    assert main(["--db", url, "ab"]) == 0
    out = capsys.readouterr().out
    assert "nothing stored" in out and "1970" not in out and "no predictions stored yet" in out


def test_bad_options_are_one_line_errors(tmp_path, capsys) -> None:
    db = ["--db", f"sqlite:///{tmp_path / 'd.db'}"]
    with pytest.raises(SystemExit) as exit_:
        main([*db, "simulate", "--days", "-1", "--out", str(tmp_path / "x.jsonl")])
    assert exit_.value.code == 2 and "--days: must be more than 0" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*db, "serve", "--port", "70000"])
    assert "port 70000 is outside 0..65535" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*db, "simulate", "--prevalence", "2", "--out", str(tmp_path / "x.jsonl")])
    assert "--prevalence: must be between 0 and 1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*db, "replay", str(tmp_path / "x.jsonl"), "--batch-size", "0"])
    assert "--batch-size: must be 1 to 2,147,483,647, got 0" in capsys.readouterr().err
    assert main([*db, "simulate", "--days", "1", "--out", str(tmp_path / "missing-dir" / "x.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "No such file or directory" in err and "Traceback" not in err
    assert main([*db, "reference", "set", "--from", "bogus", "--to", "2026-01-15"]) == 2
    assert "--from: cannot parse 'bogus'" in capsys.readouterr().err


def test_serve_on_a_taken_port_names_the_address(tmp_path, capsys) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["--db", f"sqlite:///{tmp_path / 'd.db'}", "serve", "--port", str(port)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"cannot serve /metrics on 127.0.0.1:{port}" in err and "Traceback" not in err


def test_a_windows_file_replays_whole(tmp_path, capsys) -> None:
    """A UTF-8 byte-order mark at the start and CRLF line ends (Windows editors, Excel exports) lose nothing."""
    path = tmp_path / "windows.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + _stream().replace(b"\n", b"\r\n"))
    assert main(["--db", f"sqlite:///{tmp_path / 'd.db'}", "replay", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["records"], doc["accepted"], doc["dead_lettered"]) == (233, 231, 2)


def test_dead_letters_show_payloads_literally(tmp_path, capsys, wide) -> None:
    """A rejected payload is data: rich markup in it (`[bold]`, `[country]`) is shown, not interpreted."""
    path = tmp_path / "events.jsonl"
    path.write_bytes(b'{"type": "prediction", "prediction_id": "[bold]x[/bold]", "score": "[country]"}\n')
    db = ["--db", f"sqlite:///{tmp_path / 'd.db'}"]
    assert main([*db, "replay", str(path), "--json"]) == 0
    capsys.readouterr()
    assert main([*db, "dead-letters"]) == 0
    out = capsys.readouterr().out
    assert "[bold]x[/bold]" in out and '"[country]"' in out
    with pytest.raises(SystemExit):
        main([*db, "dead-letters", "--limit", "-1"])


def test_event_values_are_shown_literally_in_tables(tmp_path, capsys, wide) -> None:
    """Category values and variant names come from events: `[eu]` is a value, not rich markup."""
    cfg = tmp_path / "driftline.yaml"
    cfg.write_text("slices: [country]\n")
    lines = [pred(f"p{i}", 0.9 if i % 2 else 0.1, T0 + i, variant="[v1]" if i < 40 else "B",
                  features={"country": "[eu]"}) for i in range(80)]
    lines += [outcome(f"p{i}", i % 3 == 0, T0 + 60 + i) for i in range(80)]
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    base = ["--config", str(cfg), "--db", f"sqlite:///{tmp_path / 'd.db'}"]
    assert main([*base, "replay", str(path), "--json"]) == 0
    capsys.readouterr()
    assert main([*base, "slices", "--window", "7d"]) == 0
    assert "[eu]" in _row(capsys.readouterr().out, "[eu]")
    assert main([*base, "metrics", "--window", "7d"]) == 0
    assert "[v1]" in _row(capsys.readouterr().out, "[v1]")


def _day(prefix: str, n: int, t0: float) -> bytes:
    return b"\n".join(pred(f"{prefix}-{i}", 0.3, t0 + i) for i in range(n)) + b"\n"


def _replay_json(capsys, db: list[str], path) -> tuple[dict, str]:
    assert main([*db, "replay", str(path), "--json"]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out), " ".join(captured.err.split())


def test_a_new_file_at_a_replayed_path_is_not_skipped(tmp_path, capsys, db) -> None:
    """A daily export overwritten at the same path: its first lines used to be skipped as 'already replayed'."""
    path = tmp_path / "export.jsonl"
    path.write_bytes(_day("mon", 100, T0))
    assert _replay_json(capsys, db, path)[0]["accepted"] == 100
    assert _replay_json(capsys, db, path)[0]["records"] == 0  # the same file again: a no-op
    path.write_bytes(_day("tue", 150, T0 + 86400))
    doc, err = _replay_json(capsys, db, path)
    assert (doc["accepted"], doc["duplicates"]) == (150, 0) and "first line changed" in err
    with path.open("ab") as fh:  # appended to: resumes where it stopped
        fh.write(_day("tue-late", 10, T0 + 2 * 86400))
    doc, err = _replay_json(capsys, db, path)
    assert (doc["records"], doc["accepted"]) == (10, 10)
    assert err.replace(" ", "") == (f"note: {path} was replayed before up to line 150: resumed at line 151 (`records` "
                                    "counts the lines read from there)").replace(" ", "")  # wrapped at 80: a long path folds
    path.write_bytes(_day("tue", 40, T0 + 86400))  # same first line, but shorter than the position
    doc, err = _replay_json(capsys, db, path)
    assert (doc["records"], doc["duplicates"]) == (40, 40) and "now shorter than the 160 lines" in err
    assert "resumed at" not in err


@pytest.mark.parametrize("compress", ["gzip", "bz2", "lzma"])
def test_compressed_exports_replay_as_they_are(tmp_path, capsys, compress, db) -> None:
    """gzip, bzip2 and xz files are told by their magic bytes (whatever their name) and replay like the plain file;
    `reference set --file` reads them too."""
    import importlib

    data = _stream()
    plain, packed = tmp_path / "plain.jsonl", tmp_path / "packed.jsonl"
    plain.write_bytes(data)
    packed.write_bytes(importlib.import_module(compress).compress(data))
    want, _ = _replay_json(capsys, ["--db", f"sqlite:///{tmp_path / 'plain.db'}"], plain)
    got, err = _replay_json(capsys, db, packed)
    assert got == want and err == ""
    assert _replay_json(capsys, db, packed)[0]["records"] == 0  # resumes: nothing new
    assert main([*db, "reference", "set", "--file", str(packed), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n"] == 130


def test_a_truncated_compressed_file_keeps_what_it_read(tmp_path, capsys, db) -> None:
    import gzip

    lines = _day("gz", 3000, T0)
    whole = gzip.compress(lines)
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(whole[: len(whole) // 2])
    assert main([*db, "replay", str(path), "--batch-size", "500"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    reached = int(re.search(r"unreadable after line ([\d,]+)", err).group(1).replace(",", ""))
    assert 0 < reached < 3000 and "Traceback" not in err
    path.write_bytes(whole[: len(whole) // 2 + 2000])  # user tryout: with --json, no summary at all was printed
    assert main([*db, "replay", str(path), "--batch-size", "500", "--json"]) == 2
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc["error"].startswith(f"{path}: unreadable after line ") and doc["error"] in " ".join(err.split())
    assert doc["records"] > 0
    reached += doc["records"]
    path.write_bytes(whole)  # the rest of the file arrives: the re-run resumes and nothing is counted twice
    doc, _ = _replay_json(capsys, db, path)
    assert (doc["records"], doc["duplicates"]) == (3000 - reached, 0)


def test_a_line_still_being_written_is_left_for_the_next_run(tmp_path, capsys, db) -> None:
    """A last line without newline that is not valid JSON yet is neither dead-lettered nor skipped later; a valid
    last line without newline (a file saved without one) is taken."""
    last = pred("last", 0.9, T0 + 500)
    path = tmp_path / "growing.jsonl"
    path.write_bytes(_day("g", 100, T0) + last[:25])
    doc, err = _replay_json(capsys, db, path)
    assert (doc["accepted"], doc["dead_lettered"], doc["held_back_line"]) == (100, 0, 100)  # JSON: 0-based index
    assert "line 101 has no newline and is not valid JSON yet" in err
    with path.open("ab") as fh:
        fh.write(last[25:])  # complete now, still without a newline
    doc, err = _replay_json(capsys, db, path)
    assert (doc["records"], doc["accepted"], doc["held_back_line"]) == (1, 1, None)
    assert err.replace(" ", "") == (f"note: {path} was replayed before up to line 100: resumed at line 101 (`records` "
                                    "counts the lines read from there)").replace(" ", "")  # and nothing else (tryout)


def test_windows_and_times_outside_what_the_buckets_can_answer_are_refused(tmp_path, capsys) -> None:
    db = ["--db", f"sqlite:///{tmp_path / 'd.db'}"]
    assert main([*db, "metrics", "--window", "90m"]) == 2  # 1.5 hourly buckets: used to be labelled 90m, sum 1h
    assert "not a whole number of buckets (1h each)" in " ".join(capsys.readouterr().err.split())
    assert main([*db, "metrics", "--at", "99999999999999"]) == 2  # used to be a traceback
    assert "outside 1970-01-01..9999-12-31" in " ".join(capsys.readouterr().err.split())
    assert main([*db, "metrics", "--at", "1796400000000"]) == 2  # epoch milliseconds: said, as for events (tryout)
    assert "it looks like epoch milliseconds" in " ".join(capsys.readouterr().err.split())


def test_global_options_are_accepted_after_the_command(tmp_path, capsys) -> None:
    """Second tryout: `driftline metrics --config c.yaml` was argparse's 'unrecognized arguments'."""
    from driftline.cli import globals_first

    db = _empty_db(tmp_path)
    capsys.readouterr()
    assert main(["--db", db, "metrics", "--json"]) == 0
    before = json.loads(capsys.readouterr().out)
    assert main(["metrics", "--json", "--db", db, "--log-level=error"]) == 0
    assert json.loads(capsys.readouterr().out) == before
    assert globals_first(["replay", "-", "--db", "x", "--", "--config"]) == ["--db", "x", "replay", "-", "--",
                                                                               "--config"]


def test_replay_of_a_pipe_says_to_read_it_from_standard_input(tmp_path, capsys) -> None:
    """User tryout: `replay <(cat f)` said only "not a file: /dev/fd/63"."""
    import os

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert main(["--db", f"sqlite:///{tmp_path / 'd.db'}", "replay", str(fifo)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"not a regular file: {fifo}" in err and "`driftline replay - < …`" in err
