"""A replayed file's position is trusted only while the lines before it are the lines replayed: each batch stores
a CRC-32 of every line up to its position (replay.sum_key) in its transaction, and a resumed replay sums the lines
it skips and compares. A new-user tryout: `replay f.jsonl` (2 lines), then f.jsonl overwritten with 4 lines, the
same first line and a changed second one, and `replay` again "resumed at line 3": the new line 2 was never read
(a same-length replacement read nothing), since only the first line and the length were checked."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

from driftline.cli import main
from driftline.config import Config
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.ingest.replay import line_sum, replay, source_name, sum_key
from driftline.storage.store import Store

from test_concurrent_writers import replay_all, state, write_files

T0 = 1_764_547_200  # 2025-12-01


def _line(i: int, score: float = 0.5) -> str:
    return json.dumps({"type": "prediction", "prediction_id": f"r{i}", "model": "m", "score": score,
                       "ts": T0 + 60 * i}) + "\n"


def _write(path: Path, ids: list[int]) -> Path:
    path.write_text("".join(_line(i) for i in ids))
    return path


def _replay(capsys, url: str, path: Path) -> tuple[dict, str]:
    """`driftline replay --json`: its summary and what it said on stderr."""
    capsys.readouterr()
    assert main(["--db", url, "replay", "--json", str(path)]) == 0
    out = capsys.readouterr()
    return json.loads(out.out), out.err


def _ids(url: str) -> int:
    store = Store(url)
    try:
        return store.join_size()
    finally:
        store.close()


def test_a_changed_second_line_is_read_not_skipped(tmp_path, capsys) -> None:
    url, path = f"sqlite:///{tmp_path / 'r.db'}", tmp_path / "f.jsonl"
    _replay(capsys, url, _write(path, [1, 2]))
    doc, err = _replay(capsys, url, _write(path, [1, 5, 3, 4]))  # same first line, new line 2
    assert doc["predictions"] == 3 and doc["duplicate_predictions"] == 1, doc
    assert "its lines 1 to 2 changed since they were replayed" in " ".join(err.split()), err
    assert _ids(url) == 5


def test_a_same_length_replacement_is_read(tmp_path, capsys) -> None:
    url, path = f"sqlite:///{tmp_path / 'r.db'}", tmp_path / "f.jsonl"
    _replay(capsys, url, _write(path, [1, 2, 3]))
    doc, err = _replay(capsys, url, _write(path, [1, 7, 8]))
    assert doc["predictions"] == 2 and "changed since they were replayed" in " ".join(err.split()), (doc, err)
    doc, err = _replay(capsys, url, path)  # and now it is the file replayed: a no-op
    assert doc["records"] == 0 and "changed" not in err


def test_an_appended_file_resumes_and_a_gzip_replacement_restarts(tmp_path, capsys) -> None:
    url, path = f"sqlite:///{tmp_path / 'r.db'}", tmp_path / "f.jsonl"
    _replay(capsys, url, _write(path, [1, 2]))
    with path.open("a") as f:
        f.write("\n" + _line(3))  # a blank line and one more event
    doc, err = _replay(capsys, url, path)
    assert doc["records"] == 1 and doc["predictions"] == 1 and "resumed at line 3" in err, (doc, err)
    gz = tmp_path / "g.jsonl.gz"
    gz.write_bytes(gzip.compress("".join(map(_line, [10, 11])).encode()))
    _replay(capsys, url, gz)
    gz.write_bytes(gzip.compress("".join(map(_line, [10, 12])).encode()))
    doc, err = _replay(capsys, url, gz)
    assert doc["predictions"] == 1 and "changed since they were replayed" in " ".join(err.split()), (doc, err)


def test_the_sum_stays_with_the_position_when_another_replay_is_ahead(tmp_path) -> None:
    """A batch fenced by a replay of the same path that got further (its lines skipped, the position kept) must
    not store the sum of its own shorter prefix next to the other's position."""
    url, path = f"sqlite:///{tmp_path / 'r.db'}", _write(tmp_path / "f.jsonl", list(range(10)))
    store = Store(url)
    store.migrate()
    try:
        pipe = Pipeline(Config(), store)
        replay(pipe, str(path))
        source = source_name(str(path))
        whole = f"10 {line_sum([_line(i).strip().encode() for i in range(10)]):08x}"
        assert store.meta(sum_key(source)) == whole
        res = replay(pipe, str(path), batch_size=3, start=0)  # a late second writer: every line already stored
        assert res.already_stored == 10 and store.positions(source) == {0: 10}
        assert store.meta(sum_key(source)) == whole
        first = [RawRecord(source, 0, i, _line(i).strip().encode()) for i in range(3)]  # a writer behind the other
        res = pipe.process_isolating(first, position_meta={sum_key(source): "3 0000abcd"})
        assert res.already_stored == 3 and store.meta(sum_key(source)) == whole
    finally:
        store.close()


def test_two_replays_of_one_path_at_once_leave_a_sum_a_rerun_accepts(tmp_path) -> None:
    lines = [_line(i).encode() for i in range(400)]
    path = write_files(tmp_path, [lines])[0]
    url = f"sqlite:///{tmp_path / 'conc.db'}"
    replay_all(url, [path, path], concurrent=True, batch=7)
    seq = f"sqlite:///{tmp_path / 'seq.db'}"
    replay_all(seq, [path], concurrent=False)
    assert state(url) == state(seq)
    store = Store(url)
    try:
        assert store.meta(sum_key(source_name(path))) == f"400 {line_sum([ln.strip() for ln in lines]):08x}"
    finally:
        store.close()
    done = subprocess.run([sys.executable, "-m", "driftline.cli", "--db", url, "replay", "--json", path],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and json.loads(done.stdout)["records"] == 0, done.stderr
    assert "changed" not in done.stderr
