"""A slice feature with many values (toxicity tryout: 10,000 languages printed ~12,650 lines of `slices`, the
ranking led by 4-prediction slices with no word on chance). The terminal now shows the `--top` worst values of each
feature and of the worst-slices list and says how many more there are; `--json` still lists every value; from 20
ranked values a note says how many shortfalls chance alone can put there."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from driftline.cli import main
from driftline.readouts.slices import MULTIPLICITY_FROM, multiplicity_note

from helpers import outcome, pred

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
LANGS = 60


def _db(tmp_path: Path, capsys) -> list[str]:
    """60 languages, 10 labelled predictions each; every third language's positives missed (recall 0)."""
    lines = []
    for i in range(LANGS * 10):
        lang, y = f"l{i % LANGS:02d}", int((i // LANGS) % 5 == 0)  # 2 positives a language
        missed = (i % LANGS) % 3 == 0
        score = 0.9 if y and not missed else 0.1
        lines += [pred(f"p{i}", score, T0 + i, features={"lang": lang}), outcome(f"p{i}", y, T0 + i + 5)]
    (tmp_path / "e.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    (tmp_path / "c.yaml").write_text("slices: [lang]\ntargets: {recall: 0.8, fpr: 0.1}\n")
    args = ["--db", f"sqlite:///{tmp_path / 's.db'}", "--config", str(tmp_path / "c.yaml")]
    assert main([*args, "replay", str(tmp_path / "e.jsonl")]) == 0
    capsys.readouterr()
    return args


def test_the_terminal_shows_the_top_values_and_says_how_many_more(tmp_path: Path, capsys,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    args = _db(tmp_path, capsys)
    assert main([*args, "slices", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (feat,) = doc["features"]
    assert len(feat["values"]) == LANGS and doc["ranked_values"] == LANGS
    worst = len(doc["worst"])
    assert worst >= LANGS // 3  # every third language misses its positives
    assert main([*args, "slices", "--top", "5"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"… {LANGS - 5} more values of lang not shown (`--top 0` shows all; `--json` lists them)" in out
    assert f"… {worst - 5} more worst slices not shown" in out
    assert out.count(" beyond target") == 5
    assert f"note: {LANGS} slice values were ranked, each by its own 95 % intervals" in out
    assert f"(~{math.ceil(LANGS * 0.05)} here)" in out
    assert main([*args, "slices", "--top", "0"]) == 0
    out = capsys.readouterr().out
    assert "more values of" not in out and " ".join(out.split()).count(" beyond target") == worst
    assert main([*args, "slices"]) == 0  # the default: 20
    out = " ".join(capsys.readouterr().out.split())
    assert f"… {LANGS - 20} more values of lang not shown" in out


def test_a_negative_top_is_refused(tmp_path: Path, capsys) -> None:
    args = _db(tmp_path, capsys)
    with pytest.raises(SystemExit) as end:
        main([*args, "slices", "--top", "-3"])
    assert end.value.code == 2
    assert "--top: -3 is negative (0 shows every value)" in capsys.readouterr().err


def test_the_multiplicity_note_starts_at_twenty_ranked_values() -> None:
    assert multiplicity_note(MULTIPLICITY_FROM - 1) is None
    assert "(~1 here)" in (multiplicity_note(MULTIPLICITY_FROM) or "")
    assert "10,000 slice values were ranked" in (multiplicity_note(10_000) or "")
    assert "(~500 here)" in (multiplicity_note(10_000) or "")
