"""`replay`'s default batch size is one number: the CLI, `run_replay` and the README all give replay.BATCH."""

from __future__ import annotations

import inspect
from pathlib import Path

from driftline.cli import build_parser
from driftline.commands.ingest import run_replay
from driftline.ingest.replay import BATCH, replay

README = Path(__file__).resolve().parents[1] / "README.md"


def test_cli_and_run_replay_default_to_replay_batch() -> None:
    args = build_parser().parse_args(["replay", "x.jsonl"])
    assert args.batch_size == BATCH
    assert inspect.signature(run_replay).parameters["batch_size"].default == BATCH
    assert inspect.signature(replay).parameters["batch_size"].default == BATCH


def test_readme_states_the_default() -> None:
    """The replay row of the CLI table names the default the code uses (it once said 20,000 in several places)."""
    text = README.read_text(encoding="utf-8")
    assert f"`--batch-size` events a transaction (default {BATCH:,};" in text
