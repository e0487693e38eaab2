"""Query commands import only what they use (issue 17): no plotting, templating, migration machinery, Kafka client
or scheduler for `metrics`/`drift`/`ab`/`alerts`/`--version`/`--help` on a migrated database. Checked on
`sys.modules` in a fresh interpreter, never by timing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from driftline.cli import main
from driftline.storage.store import Store

HEAVY = ("matplotlib", "kafka", "alembic", "apscheduler", "jinja2")
"""Top-level packages a query command must not import."""

PROBE = """
import json, sys
from driftline.cli import main
try:
    code = main(json.loads(sys.argv[1]))
except SystemExit as e:  # --version / --help exit through argparse
    code = e.code
with open(sys.argv[2], "w") as f:
    json.dump({"code": code, "modules": sorted(sys.modules)}, f)
"""


def imported_by(argv: list[str], tmp_path: Path) -> tuple[int, set[str]]:
    """Run `driftline argv` in a fresh interpreter; its exit code and the top-level packages it imported."""
    out = tmp_path / "modules.json"
    subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv), str(out)], check=True, capture_output=True,
                   timeout=120)
    result = json.loads(out.read_text())
    return result["code"], {name.split(".")[0] for name in result["modules"]}


@pytest.fixture(scope="module")
def migrated_db(tmp_path_factory) -> list[str]:
    """A migrated SQLite database holding two simulated days (replayed through the CLI) and a drift reference."""
    tmp = tmp_path_factory.mktemp("lazycli")
    events = tmp / "events.jsonl"
    db = ["--db", f"sqlite:///{tmp / 'd.db'}"]
    assert main([*db, "simulate", "--days", "2", "--per-day", "300", "--end", "2026-11-30T00:00:00Z",
                 "--out", str(events)]) == 0
    assert main([*db, "replay", str(events)]) == 0
    assert main([*db, "reference", "set", "--from", "2026-11-28", "--to", "2026-11-29"]) == 0  # for `drift`
    return db


@pytest.mark.parametrize("argv", [
    ["--version"], ["--help"], ["metrics", "--help"],
    ["metrics", "--json"], ["metrics"], ["drift", "--json"], ["ab", "--json"], ["alerts", "--json"],
    ["slices", "--json"], ["calibration", "--json"], ["dead-letters"],
], ids=" ".join)
def test_query_commands_import_no_heavy_packages(argv: list[str], migrated_db: list[str], tmp_path: Path) -> None:
    full = argv if argv[0].startswith("--") else [*migrated_db, *argv]
    code, modules = imported_by(full, tmp_path)
    assert code in (0, None)
    assert sorted(modules & set(HEAVY)) == []
    if argv[0] in ("--version", "--help") or argv[-1] == "--help":  # building the parser needs no statistics
        assert "scipy" not in modules, "a command module imports scipy at its top (make the import lazy)"


def test_a_fresh_database_is_still_migrated(tmp_path: Path) -> None:
    """The cheap check must not skip a needed upgrade: a query on a database without the schema (an empty file;
    a query refuses a file that does not exist, test_existing_db.py) creates the whole schema."""
    (tmp_path / "new.db").touch()
    url = f"sqlite:///{tmp_path / 'new.db'}"
    assert main(["--db", url, "metrics", "--json"]) == 0
    store = Store(url)
    try:
        assert store.schema_is_current()
    finally:
        store.close()


def test_script_heads_read_without_alembic_equal_alembics() -> None:
    """The cheap check reads the same heads Alembic's script directory computes."""
    from alembic.config import Config as AlembicConfig
    from alembic.script import ScriptDirectory

    from driftline.storage.revisions import VERSIONS, script_heads

    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(VERSIONS.parent))
    assert script_heads() == frozenset(ScriptDirectory.from_config(cfg).get_heads())
    assert len(script_heads()) > 1  # branches from 0001: several heads, all must be stored


def test_the_wilson_z_literal_is_scipys_quantile() -> None:
    from scipy.stats import norm

    from driftline.analysis.rates import Z95

    assert Z95 == float(norm.ppf(0.975))
