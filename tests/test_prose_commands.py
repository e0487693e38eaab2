"""A command suggested in prose (between backticks) is never broken across lines: verification tryout, at 80
columns "run `driftline models forget 'ok model; rm -rf x '"'"'q"' ⏎--yes`" pasted as shown ran the first line
without --yes. Other prose still wraps between words at the console's width."""

from __future__ import annotations

import io
import re
import shlex

import msgspec
from rich.console import Console

from driftline import cli
from driftline.commands.prose import say

NAME = "ok model; rm -rf x 'q\""
END = 1_795_996_800.0


def _said(body: str, lead: str = "", width: int = 80) -> str:
    console = Console(file=io.StringIO(), width=width, highlight=False, color_system=None)
    say(console, body, lead=lead)
    return console.file.getvalue()


def _commands(out: str) -> list[str]:
    return re.findall(r"`([^`]*)`", out)


def test_a_command_in_prose_is_never_broken_whatever_the_lead_or_width():
    command = f"driftline models forget {shlex.quote(NAME)} --yes"
    body = f"nothing changed: run `{command}` to delete; fix the producer that sends the name"
    for lead in ("", "note: ", "  [yellow]warning:[/yellow] "):
        for width in (40, 60, 80, 100):
            out = _said(body, lead, width)
            assert _commands(out) == [command], out
            assert " ".join(out.split()) == " ".join(f"{lead.replace('[yellow]', '').replace('[/yellow]', '')}"
                                                     f"{body}".split())
            assert all(len(line) <= width for line in out.splitlines() if "`" not in line), out


def test_other_prose_wraps_as_before():
    body = "a very long line of ordinary prose " * 4 + "with `code` in it"
    out = _said(body.strip(), "note: ")
    assert out.splitlines() == ["note: a very long line of ordinary prose a very long line of ordinary prose a",
                                "      very long line of ordinary prose a very long line of ordinary prose with",
                                "      `code` in it"], out
    glued = _said(body.strip().replace("`code`", "`co de`"), "note: ")  # a short command: wrapped at the same place
    assert glued.replace("`co de`", "`code`") == out, glued


def test_the_forget_hint_at_80_columns_pastes_whole(tmp_path, capsys, monkeypatch):
    base = ["--db", f"sqlite:///{tmp_path / 'm.db'}"]
    (tmp_path / "e.jsonl").write_bytes(msgspec.json.encode({"type": "prediction", "prediction_id": "p1",
                                                             "model": NAME, "ts": END, "score": 0.5}) + b"\n")
    assert cli.main([*base, "replay", str(tmp_path / "e.jsonl")]) == 0
    monkeypatch.setenv("COLUMNS", "80")
    capsys.readouterr()
    assert cli.main([*base, "models", "forget", NAME]) == 1
    out = capsys.readouterr().out
    hints = [c for c in _commands(out) if c.startswith("driftline models forget")]
    assert hints and all("\n" not in c for c in hints), out
    assert shlex.split(hints[0])[3:] == [NAME, "--yes"], out
