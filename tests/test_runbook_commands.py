"""Every `driftline …` command docs/RUNBOOKS.md tells the on-call engineer to type exists: it parses with the real
CLI parser (placeholders such as `<reason>` filled in, `<N>` with a number). The runbook of DriftlineExportersAllDown named
`driftline check-config`, which is no command (found typing the runbook's commands as written)."""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

from driftline.cli import build_parser, globals_first

RUNBOOKS = Path(__file__).resolve().parents[1] / "docs" / "RUNBOOKS.md"


def _commands() -> list[str]:
    """The inline `driftline <command> …` spans of the runbooks (a line break inside a span is a space)."""
    spans = re.findall(r"`(driftline [a-z][^`]*)`", RUNBOOKS.read_text())
    return sorted({re.sub(r"\s+", " ", s) for s in spans})


def test_the_runbooks_name_commands():
    assert len(_commands()) >= 8, _commands()


@pytest.mark.parametrize("command", _commands())
def test_a_runbook_command_parses(command: str):
    argv = shlex.split(re.sub(r"<[^>]*>", "x", command.replace("<N>", "1")))[1:]  # <N>: a count
    parser = build_parser()
    if len(argv) == 1:  # a command named in prose (`driftline replay`): it must exist
        (commands,) = [a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        assert argv[0] in commands, f"docs/RUNBOOKS.md: `{command}` is no driftline command"
        return
    try:
        parser.parse_args(globals_first(argv))
    except SystemExit as exc:
        pytest.fail(f"docs/RUNBOOKS.md: `{command}` is refused by the CLI (exit {exc.code})")
