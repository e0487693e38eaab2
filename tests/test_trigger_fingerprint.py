"""A trigger edited in the config after its state was stored: every output knows the state was judged under another
definition (Rule.fingerprint stored with it, migration 0015_rulefp) and shows none of that judgement's reading as the
new rule's, and the next evaluation judges the new definition afresh (user tryout: `alerts` showed "fpr > 0.12 ·
variant control … ok 0.104 n=6,938", the whole model's numbers judged under the old line)."""

from __future__ import annotations

import json
from dataclasses import replace
from importlib.resources import files
from pathlib import Path

import msgspec
import pytest
import yaml
from prometheus_client import CollectorRegistry, generate_latest
from sqlalchemy import text

from driftline import cli
from driftline.config import load
from driftline.exporter.collector import SnapshotCollector
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.ingest.simulate import SimSpec, stream
from driftline.storage import revisions
from driftline.reports.headline import trigger_judgements
from driftline.storage.store import Store
from driftline.triggers import history
from driftline.triggers.model import FIRING, OK, PENDING, RESOLVED, Observation, Rule, evaluate

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "driftline.example.yaml"
END = 1_795_996_800.0  # 2026-11-30T00:00:00Z
FPR = Rule(name="fpr_high", metric="fpr", op=">", value=0.08, min_n=30, for_s=900.0, hysteresis=0.02)


def test_the_fingerprint_covers_what_is_judged_and_not_timing_or_routing():
    assert len(FPR.fingerprint) == 12 and FPR.fingerprint == replace(FPR).fingerprint
    for change in ({"value": 0.12}, {"variant": "control"}, {"metric": "recall"}, {"window_s": 86400.0},
                   {"op": ">="}, {"feature": "amount"}, {"min_n": 100}, {"mode": "confident"}):
        assert replace(FPR, **change).fingerprint != FPR.fingerprint, change
    for change in ({"severity": "critical"}, {"for_s": 60.0}, {"cooldown_s": 60.0}, {"hysteresis": 0.0},
                   {"description": "x"}, {"runbook_url": "https://x"}):
        assert replace(FPR, **change).fingerprint == FPR.fingerprint, change
    assert replace(FPR, metric="brier_score").fingerprint == replace(FPR, metric="brier").fingerprint  # an alias


def test_a_pending_wait_restarts_and_a_firing_alert_is_rejudged_under_the_new_definition():
    high = Observation(0.11, 0.10, 0.12, n=500)
    pending = evaluate(FPR, None, high, 0.0).state
    assert pending.state == PENDING and pending.fingerprint == FPR.fingerprint
    # same definition: the wait counts from the first breach; an edited one starts it again
    assert evaluate(FPR, pending, high, 1000.0).state.state == FIRING
    edited = replace(FPR, variant="control")
    again = evaluate(edited, pending, high, 1000.0).state
    assert (again.state, again.pending_since, again.since) == (PENDING, 1000.0, 1000.0)
    # a state stored before fingerprints (None) keeps the behaviour it had
    assert evaluate(edited, replace(pending, fingerprint=None), high, 1000.0).state.state == FIRING
    firing = evaluate(FPR, pending, high, 1000.0).state
    band = Observation(0.07, 0.06, 0.08, n=500)  # under the line, inside its hysteresis band
    assert evaluate(FPR, firing, band, 2000.0).state.state == FIRING  # unchanged: the band holds the alert
    ev = evaluate(replace(FPR, value=0.075), firing, band, 2000.0)  # edited, not breached: resolved and told
    assert ev.state.state == RESOLVED and ev.notice is not None and ev.notice.kind == "resolved"
    kept = evaluate(replace(FPR, value=0.06), firing, band, 2000.0)  # edited, still breached: the same alert
    assert kept.state.state == FIRING and kept.state.firing_since == firing.firing_since and kept.transition is None


def _populate(url: str, config_path: Path) -> None:
    store = Store(url, clock=lambda: END)
    store.migrate()
    enc = msgspec.json.Encoder()
    raws = [enc.encode(e) for e in stream(SimSpec(start=END - 8 * 86400, days=8, per_day=300, seed=5), end=END)]
    Pipeline(load(config_path), store, clock=lambda: END).process_batch(
        [RawRecord("f", 0, j, r) for j, r in enumerate(raws)])
    store.close()


def _config(tmp_path: Path, trigger: dict) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({**yaml.safe_load(EXAMPLE.read_text()), "triggers": [trigger]}))
    return path


OLD = {"name": "fpr_high", "metric": "fpr", "op": ">", "value": 0.08}
NEW = {"name": "fpr_high", "metric": "fpr", "op": ">", "value": 0.12, "variant": "B", "window": "3d"}


def _trigger_values(store: Store, config_path: Path) -> dict[str, float]:
    reg = CollectorRegistry()
    reg.register(SnapshotCollector(store, load(config_path), clock=lambda: END, cache_s=0.0))
    return {line.split(" ")[0]: float(line.split(" ")[1]) for line in generate_latest(reg).decode().splitlines()
            if line.startswith("driftline_trigger_value{")}


def test_alerts_after_an_edit_shows_no_reading_of_the_old_definition_until_it_is_judged(tmp_path, capsys,
                                                                                        monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    url = f"sqlite:///{tmp_path / 'e.db'}"
    old = _config(tmp_path, OLD)
    _populate(url, old)
    assert cli.main(["--config", str(old), "--db", url, "alerts", "evaluate", "--at", repr(END), "--json"]) == 0
    judged = json.loads(capsys.readouterr().out)["triggers"][0]["state"]
    store = Store(url)
    assert len(_trigger_values(store, old)) == 1
    new = _config(tmp_path, NEW)
    base = ["--config", str(new), "--db", url, "alerts"]
    assert cli.main(base + ["--json"]) == 0
    st = json.loads(capsys.readouterr().out)["triggers"][0]["state"]
    assert st["definition"] == "changed" and st["state"] == judged["state"]
    assert st["updated_at"] == "2026-11-30T00:00:00Z"  # when it was judged
    assert (st["value"], st["low"], st["high"], st["judged"], st["n"], st["window"]) == (None,) * 6
    assert st["previous_reading"]["value"] == judged["value"] and st["previous_reading"]["window"] == "7d"
    assert cli.main(base) == 0
    table = capsys.readouterr().out
    assert "changed since judged" in table and "next evaluation" in table and "2026-11-30T00:00:00Z" in table
    row = next(line for line in table.splitlines() if "fpr_high" in line and "0.12" in line)
    assert f"{judged['value']:.3f}" not in row and f"{judged['n']:,}" not in row
    assert _trigger_values(store, new) == {}  # the exporter's value is the old definition's: left out
    live = trigger_judgements(store, load(new), "fraud", END)[0]["live"]  # the weekly report's live state
    assert live["definition"] == "changed"
    assert cli.main(base + ["evaluate", "--at", repr(END + 60), "--json"]) == 0
    capsys.readouterr()
    assert cli.main(base + ["--json"]) == 0
    st = json.loads(capsys.readouterr().out)["triggers"][0]["state"]
    assert st["definition"] == "current" and st["window"] == "3d" and st["previous_reading"] is None
    assert st["value"] is not None and st["n"] < judged["n"]  # variant B over 3d: the new rule's own reading
    assert len(_trigger_values(store, new)) == 1
    store.close()


@pytest.fixture(params=["sqlite", "postgres"])
def old_url(request, tmp_path) -> str:
    """A database at every head but 0015_rulefp (at 0003 for the triggers), as the previous build left it."""
    from alembic import command
    from alembic.config import Config as AlembicConfig

    url = f"sqlite:///{tmp_path / 'old.db'}" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(files("driftline.storage") / "migrations"))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    for head in sorted(revisions.script_heads() - {"0015_rulefp"}) + ["0003"]:
        command.upgrade(cfg, head)
    return url


def test_the_upgrade_keeps_old_states_with_an_unknown_definition(old_url, tmp_path, capsys):
    store = Store(old_url)
    with store.write() as conn:
        conn.execute(text('INSERT INTO trigger_states (model, "trigger", state, since, updated_at, firing_since, '
                          'last_notified, value, low, high, judged, n, "window") VALUES (\'fraud\', \'fpr_high\', '
                          "'firing', :t, :t, :t, :t, 0.104, 0.097, 0.111, 0.104, 6938, '7d')"), {"t": END})
    store.close()
    store = Store(old_url)
    store.migrate()
    assert store.schema_is_current()
    state = history.load_states(store, "fraud")["fpr_high"]
    assert (state.state, state.n, state.fingerprint) == (FIRING, 6938, None)
    store.close()
    config = _config(tmp_path, OLD)
    assert cli.main(["--config", str(config), "--db", old_url, "alerts", "--json"]) == 0
    st = json.loads(capsys.readouterr().out)["triggers"][0]["state"]
    assert st["definition"] == "unknown" and st["state"] == FIRING and st["value"] is None
    assert st["previous_reading"]["n"] == 6938


def test_an_evaluation_under_an_unchanged_definition_keeps_the_state_it_had():
    ok = evaluate(FPR, None, Observation(0.05, 0.04, 0.06, n=500), 0.0).state
    again = evaluate(FPR, ok, Observation(0.05, 0.04, 0.06, n=500), 60.0).state
    assert (again.state, again.since, again.fingerprint) == (OK, 0.0, FPR.fingerprint)
