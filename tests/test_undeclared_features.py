"""Feature names present in events but not declared under `features:` (issue 17 §4): counted by name at
ingestion (bounded), shown by `drift`, `drift --json` and the weekly report instead of only a counter."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from driftline.cli import main
from driftline.commands.simulate import write_stream
from driftline.core.limits import MAX_UNDECLARED_NAMES, UNDECLARED_COUNTER
from driftline.core.moves import count_undeclared
from driftline.ingest.simulate import SimSpec
from driftline.storage.store import Store

START = 1_767_225_600.0  # 2026-01-01T00:00:00Z, a Thursday of ISO week 2026-W01
DAY = 86400.0
CONFIG = """
model: fraud
threshold: 0.5
features: {amount: numeric, country: categorical}
"""


def _world(tmp_path: Path) -> tuple[list[str], Counter[str], str]:
    cfg = tmp_path / "driftline.yaml"
    cfg.write_text(CONFIG)
    events = tmp_path / "events.jsonl"
    write_stream(SimSpec(start=START, days=3, per_day=300, seed=4, drift_day=None), START + 3 * DAY, str(events))
    seen: Counter[str] = Counter()
    for line in events.read_text().splitlines():
        ev = json.loads(line)
        if ev["type"] == "prediction":
            seen.update(k for k in ev["features"] if k not in ("amount", "country"))
    url = f"sqlite:///{tmp_path / 'u.db'}"
    base = ["--config", str(cfg), "--db", url]
    assert main([*base, "replay", str(events)]) == 0
    assert main([*base, "reference", "set", "--from", "2026-01-01T00:00:00Z", "--to", "2026-01-02T00:00:00Z"]) == 0
    return base, seen, url


def test_drift_names_undeclared_features_with_counts_in_text_json_and_report(tmp_path, capsys) -> None:
    base, seen, url = _world(tmp_path)
    assert len(seen) >= 3  # the simulated stream carries more features than the config declares
    capsys.readouterr()
    assert main([*base, "drift", "--json", "--at", "2026-01-04T00:00:00Z", "--window", "2d"]) == 0
    doc = json.loads(capsys.readouterr().out)
    und = doc["undeclared"]
    assert {n["feature"]: n["count"] for n in und["names"]} == dict(seen)  # every occurrence, by name
    assert und["occurrences"] == sum(seen.values())
    assert [n["count"] for n in und["names"]] == sorted(seen.values(), reverse=True)  # most frequent first
    assert main([*base, "drift", "--at", "2026-01-04T00:00:00Z", "--window", "2d"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    top = und["names"][0]
    assert f"{len(seen)} feature names seen but not declared (not monitored): " in out
    assert f"{top['feature']} ({top['count']:,})" in out
    assert main([*base, "report", "--week", "2026-W01", "--out", str(tmp_path / "r")]) == 0
    html = (tmp_path / "r" / "report-fraud-2026-W01.html").read_text().replace("<wbr>", "")  # names wrap at _
    md = (tmp_path / "r" / "report-fraud-2026-W01.md").read_text()
    assert 'id="undeclared"' in html and f"{len(seen)} feature names seen in events but not declared" in html
    assert f"{top['feature']} ({top['count']:,})" in html
    assert "**Not monitored:**" in md


def test_no_undeclared_block_when_every_feature_is_declared(tmp_path, capsys) -> None:
    """A stream whose features are all declared shows no undeclared line (None in --json)."""
    cfg = tmp_path / "driftline.yaml"
    cfg.write_text("model: fraud\nthreshold: 0.5\n")  # nothing declared: features are inferred, none refused
    events = tmp_path / "events.jsonl"
    write_stream(SimSpec(start=START, days=2, per_day=200, seed=5, drift_day=None), START + 2 * DAY, str(events))
    base = ["--config", str(cfg), "--db", f"sqlite:///{tmp_path / 'd.db'}"]
    assert main([*base, "replay", str(events)]) == 0
    assert main([*base, "reference", "set", "--from", "2026-01-01T00:00:00Z", "--to", "2026-01-02T00:00:00Z"]) == 0
    capsys.readouterr()
    assert main([*base, "drift", "--json", "--at", "2026-01-03T00:00:00Z", "--window", "1d"]) == 0
    assert json.loads(capsys.readouterr().out)["undeclared"] is None


def test_undeclared_names_are_bounded_per_batch_and_in_the_store(tmp_path) -> None:
    """Hostile input cannot grow the counters table: at most MAX_UNDECLARED_NAMES names are recorded by name,
    per batch and across batches; names already recorded keep counting."""
    c: Counter[tuple[str, str]] = Counter()
    for i in range(MAX_UNDECLARED_NAMES + 10):
        count_undeclared(c, f"f{i}")
    count_undeclared(c, "f0")
    assert sum(1 for n, _ in c if n == UNDECLARED_COUNTER) == MAX_UNDECLARED_NAMES
    assert c[(UNDECLARED_COUNTER, "f0")] == 2
    store = Store(f"sqlite:///{tmp_path / 'b.db'}")
    store.migrate()
    try:
        first = {(UNDECLARED_COUNTER, f"a{i}"): 1 for i in range(40)}
        second = {(UNDECLARED_COUNTER, f"b{i}"): 1 for i in range(40)} | {(UNDECLARED_COUNTER, "a0"): 5}
        for batch in (first, second):
            with store.write() as conn:
                store._add_counters(conn, batch)
        names = store.undeclared_features()
        assert len(names) == MAX_UNDECLARED_NAMES and names["a0"] == 6
        assert sum(n.startswith("b") for n in names) == MAX_UNDECLARED_NAMES - 40
    finally:
        store.close()


def test_more_undeclared_names_than_recorded_say_at_least(tmp_path, capsys) -> None:
    """Tryout: one event with 500 undeclared features made `drift` say "50 feature names seen but not declared":
    past MAX_UNDECLARED_NAMES the names listed are not all of them, so the text, --json and the report say so."""
    cfg = tmp_path / "driftline.yaml"
    cfg.write_text(CONFIG)
    events = tmp_path / "e.jsonl"
    rows = [{"type": "prediction", "prediction_id": f"p{i}", "model": "fraud", "ts": "2026-01-01T10:00:00Z",
             "score": 0.2, "features": {"amount": 1.0, "country": "FR"}} for i in range(40)]
    rows.append({"type": "prediction", "prediction_id": "wide", "model": "fraud", "ts": "2026-01-01T11:00:00Z",
                 "score": 0.2, "features": {f"x{i}": i for i in range(500)}})
    events.write_text("".join(json.dumps(r) + "\n" for r in rows))
    base = ["--config", str(cfg), "--db", f"sqlite:///{tmp_path / 'w.db'}"]
    assert main([*base, "replay", str(events)]) == 0
    assert main([*base, "reference", "set", "--from", "2026-01-01T00:00:00Z", "--to", "2026-01-02T00:00:00Z"]) == 0
    capsys.readouterr()
    assert main([*base, "drift", "--json", "--at", "2026-01-02T00:00:00Z", "--window", "1d"]) == 0
    und = json.loads(capsys.readouterr().out)["undeclared"]
    assert und["occurrences"] == 500 and len(und["names"]) == MAX_UNDECLARED_NAMES
    assert und["names_complete"] is False
    assert main([*base, "drift", "--at", "2026-01-02T00:00:00Z", "--window", "1d"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"at least {MAX_UNDECLARED_NAMES} feature names seen but not declared" in out
    assert main([*base, "report", "--week", "2026-W01", "--out", str(tmp_path / "r")]) == 0
    md = (tmp_path / "r" / "report-fraud-2026-W01.md").read_text()
    assert f"at least {MAX_UNDECLARED_NAMES} feature names seen in events" in md
