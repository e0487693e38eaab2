"""`driftline demo` end to end (small volume): the recall alert fires in week four and is printed with its value,
interval and n, /metrics is served while it runs, the week-four report is written; its settings are the
example config's; it never overwrites a database it did not write."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import msgspec
import pytest

from driftline.cli import main
from driftline.commands.demo import EXAMPLE_BASELINE, EXAMPLE_FEATURES, EXAMPLE_SLICES, demo_config, demo_end
from driftline.config import Config, load
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.storage.store import Store

REPO = Path(__file__).resolve().parent.parent
ALERT = re.compile(r"^(\S+)  ALERT recall_below_target FIRING \(critical\): recall (0\.\d{3}) \[(0\.\d{3}), "
                   r"(0\.\d{3})\] n=(\d+) over 7d, line < 0\.70$", re.M)  # the line as agreed (numbers.line)


@pytest.mark.slow
def test_demo_runs_end_to_end_and_its_recall_alert_fires(tmp_path: Path) -> None:
    """Four weeks at 400 predictions a day through the real CLI: one recall alert in week four, a scrape of the
    demo's own /metrics, and the week-four report (with the alert in it) written and stored."""
    env = {**os.environ, "COLUMNS": "200"}
    started = datetime.now(timezone.utc).timestamp()
    proc = subprocess.run([sys.executable, "-m", "driftline.cli", "--db", f"sqlite:///{tmp_path / 'demo.db'}",
                           "demo", "--per-day", "400", "--workdir", str(tmp_path / "w"), "--port", "0"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    alerts = ALERT.findall(out)
    assert len(alerts) == 1, out
    when, value, low, high, n = alerts[0]
    paths = re.findall(r"(\S+report-fraud-\d{4}-W\d{2}\.(?:html|md|json))", out)
    assert len(paths) == 3 and all(Path(p).exists() for p in paths)
    doc = json.loads(Path(next(p for p in paths if p.endswith(".json"))).read_text())
    # the demo ends its weeks at the Monday of the week it started in: a run from Sunday 23:59 into Monday ends a
    # week before the Monday of the clock after it (CI would have failed there)
    end = datetime.fromisoformat(doc["window"]["end"].replace("Z", "+00:00")).timestamp()
    assert end in {demo_end(started), demo_end(datetime.now(timezone.utc).timestamp())}
    fired_at = datetime.fromisoformat(when.replace("Z", "+00:00")).timestamp()
    assert end - 7 * 86400 < fired_at <= end  # in week four, after the drift of day 21
    assert float(low) < float(value) < float(high) and float(value) < 0.7 and int(n) >= 30  # point mode
    assert "driftline.example.yaml" in proc.stderr and "served at http://127.0.0.1:" in proc.stderr
    used = tmp_path / "w" / "driftline.yaml"  # second tryout: the settings the note pointed at were nowhere
    assert f"run later commands with `driftline --config {used} …`" in " ".join(proc.stderr.split())
    assert [t.name for t in load(used).triggers] == ["recall_below_target", "fpr_above_target"]
    base = re.search(r"Next, on the demo's database with its settings: `(.+?) metrics`", " ".join(proc.stderr.split()))
    assert base is not None and f"--config {used}" in base.group(1) and "demo.db" in base.group(1)
    argv = shlex.split(base.group(1))[1:]  # tryout: the bare commands suggested ran without the demo's settings
    alerts_out = subprocess.run([sys.executable, "-m", "driftline.cli", *argv, "alerts"], capture_output=True,
                                text=True, timeout=120, cwd=tmp_path, env=env)
    assert alerts_out.returncode == 0 and "recall_below_target" in alerts_out.stdout
    assert "no triggers configured" not in alerts_out.stdout + alerts_out.stderr
    scraped = re.search(r"/metrics scraped: (\d+) driftline series, "
                        r'driftline_recall_ratio\{variant="all",window="7d"\} = (0\.\d+)', out)
    assert scraped is not None and int(scraped.group(1)) > 50 and float(scraped.group(2)) < 0.7
    fired = [a for a in doc["alerts"]["transitions"] if a["to_state"] == "firing"]
    assert doc["alerts"]["fired"] == 1 and fired[0]["trigger"] == "recall_below_target"
    assert fired[0]["value"] == pytest.approx(float(value), abs=5e-4) and fired[0]["n"] == int(n)
    assert doc["drift"]["available"] and "country" in doc["drift"]["document"]["drifted"]
    assert doc["business"]["baseline"]["name"] == "rules engine" and doc["slices"]["available"]
    store = Store(f"sqlite:///{tmp_path / 'demo.db'}")
    try:
        from driftline.reports import table

        assert [r["week"] for r in table.listing(store)] == [doc["week"]]
        with store.engine.connect() as conn:  # user tryout: the history said notified although nothing was sent
            notified = conn.exec_driver_sql("SELECT notified FROM alert_history").scalars().all()
        assert notified and not any(notified)
    finally:
        store.close()


def test_demo_settings_are_the_example_configs() -> None:
    """Without them the demo uses driftline.example.yaml's triggers, features, slices, costs and domain words."""
    example = load(REPO / "driftline.example.yaml")
    cfg, notes = demo_config(Config())
    assert cfg.triggers == example.triggers
    assert cfg.features == example.features == EXAMPLE_FEATURES and cfg.slices == example.slices == EXAMPLE_SLICES
    assert {k: getattr(example.costs, k) for k in EXAMPLE_BASELINE} == EXAMPLE_BASELINE
    assert cfg.costs == example.costs and cfg.domain == example.domain
    assert len(notes) == 5 and "recall < 0.70" in notes[0]
    same, none = demo_config(example)
    assert same is example and none == []
    assert demo_end(datetime(2026, 11, 26, 15, tzinfo=timezone.utc).timestamp()) == \
        datetime(2026, 11, 23, tzinfo=timezone.utc).timestamp()


EV = {"type": "prediction", "prediction_id": "p1", "model": "fraud", "ts": 1_700_000_000, "score": 0.4}


def _other_data(tmp_path: Path) -> tuple[str, dict]:
    """A SQLite database holding one prediction not written by the demo, and that event."""
    url = f"sqlite:///{tmp_path / 'prod.db'}"
    store = Store(url)
    store.migrate()
    Pipeline(Config(), store, clock=lambda: 1_700_000_000).process_batch(
        [RawRecord("x", 0, 0, msgspec.json.encode(EV))])
    store.close()
    return url, EV


def test_demo_refuses_a_database_it_did_not_write(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A SQLite file holding other data is left alone (exit 2) unless --reset is given."""
    url, ev = _other_data(tmp_path)
    assert main(["--db", url, "demo", "--per-day", "10", "--days", "1", "--workdir", str(tmp_path / "w"),
                 "--port", "0"]) == 2
    assert "holds data not written by the demo" in capsys.readouterr().err
    store = Store(url)
    assert store.bucket_range(None) is not None
    store.close()


def test_demo_refuses_a_database_named_with_a_query_or_fed_after_a_demo(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """User tryout: `--db "sqlite:///real.db?timeout=5" demo` mixed 28 days of simulated events into real.db (the
    path was sliced from the URL, 'real.db?timeout=5' did not exist, so the data check was skipped); and a second
    `demo` deleted events the user had replayed into the first demo's database, since the demo's marker won."""
    url, ev = _other_data(tmp_path)
    demo = ["demo", "--per-day", "10", "--days", "1", "--workdir", str(tmp_path / "w"), "--port", "0"]
    assert main(["--db", url + "?timeout=5", *demo]) == 2
    assert "holds data not written by the demo" in capsys.readouterr().err
    mine = f"sqlite:///{tmp_path / 'demo.db'}"
    assert main(["--db", mine, *demo]) == 0
    assert main(["--db", mine, *demo]) == 0  # a demo's own database is replaced by the next demo
    extra = tmp_path / "mine.jsonl"
    extra.write_text(msgspec.json.encode({**ev, "prediction_id": "mine-1"}).decode() + "\n")
    assert main(["--db", mine, "replay", str(extra)]) == 0
    capsys.readouterr()
    assert main(["--db", mine, *demo]) == 2
    assert f"also fed from file:{extra}" in " ".join(capsys.readouterr().err.split())
    assert main(["--db", mine, *demo, "--reset"]) == 0


def test_demo_with_its_port_taken_fails_at_once_and_changes_nothing(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Tryout: `demo --port N` with N taken printed the settings it used, wrote them, and replaced the previous
    demo's database before ending `error: --port N: … Address already in use`; now that is its only line."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        db = tmp_path / "demo.db"
        assert main(["--db", f"sqlite:///{db}", "demo", "--per-day", "10", "--days", "1", "--workdir",
                     str(tmp_path / "w"), "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [f"error: --port {port}: cannot serve /metrics on 127.0.0.1:{port}: Address already in "
                                "use (another program listens there? pick another port, or --port 0 for any free one)"]
    assert not db.exists() and not (tmp_path / "w").exists()

