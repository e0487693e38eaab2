"""Helpers for the readout tests that drive `driftline` in-process through its CLI entry point: run a command and
parse its JSON output, and replay an events file into a database through `driftline replay` (the set-up of the
module-scoped fixtures), so every readout test sees the stored state exactly as a user's commands would leave it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from driftline.cli import main

# Config of model `fraud` declaring the simulated stream's nine features (driftline.ingest.simulate) with their kinds.
SIM_CONFIG = """
model: fraud
threshold: 0.5
features: {amount: numeric, country: categorical, channel: categorical, card_present: categorical,
           merchant_category: categorical, hour: numeric, account_age_days: numeric, tx_count_24h: numeric,
           distance_km: numeric}
"""


def cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    """Run `driftline ARGV` in-process, require exit status 0 and return its standard output parsed as JSON
    (output captured before the call is discarded, so only this command's document is parsed)."""
    capsys.readouterr()
    code = main(list(argv))
    assert code == 0, f"driftline {' '.join(argv)} exited with {code}"
    return json.loads(capsys.readouterr().out)


class Replayed(NamedTuple):
    """What a replay set-up leaves for the tests: the global options every later command takes, the database URL
    and the config file written."""

    base: list[str]
    url: str
    config: Path


def replay_through_cli(directory: Path, config: str, events: Path, db: str) -> Replayed:
    """Write `config` to DIRECTORY/driftline.yaml and replay `events` through `driftline replay` into `db`: a file
    name for SQLite under DIRECTORY, or a full SQLAlchemy URL (e.g. a PostgreSQL test database)."""
    cfg = directory / "driftline.yaml"
    cfg.write_text(config)
    url = db if "://" in db else f"sqlite:///{directory / db}"
    base = ["--config", str(cfg), "--db", url]
    code = main([*base, "replay", str(events)])
    assert code == 0, f"driftline replay {events} exited with {code}"
    return Replayed(base, url, cfg)
