"""Issue 15 part 3: a window never includes predictions at or after `--at`.

`--at` between bucket boundaries is aligned down to the last boundary at or before it, for every window producer
(metrics, drift, calibration, slices, ab, alerts evaluate, report's headline, the exporter on the clock).
"""

from __future__ import annotations

import json

import pytest
import yaml

from driftline import cli
from driftline.config import from_dict
from driftline.core.events import iso
from driftline.readouts.windows import default_at, window_ending
from driftline.storage.store import Store

from helpers import outcome, pred

MIDNIGHT = 1_788_739_200.0  # 2026-09-07T00:00:00Z
AT = MIDNIGHT + 1800  # 00:30, between bucket boundaries


def _events() -> bytes:
    """A labelled prediction every 5 minutes from 22:00 to 01:55, scores rising with time, alternating labels, and a
    prediction at 00:45 that is the only flagged positive after `--at` (so a leak shows in every count)."""
    lines = []
    for i in range(48):
        ts = MIDNIGHT - 7200 + i * 300
        pid = f"p{i}"
        lines += [pred(pid, 0.2 + 0.01 * (i % 50), ts, features={"amount": float(i)}), outcome(pid, i % 2, ts + 60)]
    return b"\n".join(lines) + b"\n"


@pytest.fixture
def base(tmp_path, capsys) -> list[str]:
    path = tmp_path / "e.jsonl"
    path.write_bytes(_events())
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"slices": ["amount"], "triggers": [
        {"name": "alerts", "metric": "alert_rate", "op": ">", "value": 0.99, "window": "4h", "min_n": 1}]}))
    b = ["--config", str(cfg), "--db", f"sqlite:///{tmp_path / 'd.db'}"]
    assert cli.main([*b, "replay", str(path), "--json"]) == 0
    capsys.readouterr()
    return b


def _before_at(window_s: float) -> int:
    """Predictions of `_events` in the aligned-down window: [00:00 − window, 00:00)."""
    return sum(1 for i in range(48) if MIDNIGHT - window_s <= MIDNIGHT - 7200 + i * 300 < MIDNIGHT)


def test_window_ending_aligns_down_and_never_passes_at() -> None:
    w = window_ending(AT, 3600, 3600)
    assert (w.start, w.end) == (MIDNIGHT - 3600, MIDNIGHT)
    assert window_ending(MIDNIGHT, 3600, 3600).end == MIDNIGHT  # an aligned --at is the end itself
    for at in (MIDNIGHT + 1, MIDNIGHT + 3599.999, MIDNIGHT - 0.001):
        assert window_ending(at, 7200, 3600).end <= at


def test_metrics_at_between_boundaries_excludes_the_future(base, capsys) -> None:
    assert cli.main([*base, "metrics", "--window", "1h", "--at", iso(AT), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["window"]["end"] == iso(MIDNIGHT) and doc["window"]["start"] == iso(MIDNIGHT - 3600)
    assert doc["counts"]["predictions"] == _before_at(3600) == 12
    assert cli.main([*base, "metrics", "--window", "4h", "--at", iso(AT), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["counts"]["predictions"] == _before_at(4 * 3600) == 24


def test_every_window_producer_ends_at_or_before_at(base, capsys) -> None:
    assert cli.main([*base, "reference", "set", "--from", iso(MIDNIGHT - 7200), "--to", iso(MIDNIGHT)]) == 0
    capsys.readouterr()
    for cmd in ("drift", "calibration", "slices", "ab"):
        assert cli.main([*base, cmd, "--window", "4h", "--at", iso(AT), "--json"]) == 0, cmd
        doc = json.loads(capsys.readouterr().out)
        assert doc["window"]["end"] == iso(MIDNIGHT), (cmd, doc["window"])
        if cmd == "drift":
            assert doc["window"]["n"] == _before_at(4 * 3600) == 24
    assert cli.main([*base, "alerts", "evaluate", "--at", iso(AT), "--json", "--no-notify"]) == 0
    run = json.loads(capsys.readouterr().out)
    state = run["triggers"][0]["state"]
    assert state["n"] == _before_at(4 * 3600) == 24  # alert_rate's n: the predictions of [20:00, 00:00)


def test_default_at_is_a_boundary_after_every_stored_prediction(base, tmp_path) -> None:
    store = Store(base[-1])
    try:
        at = default_at(store, "fraud", 3600)
    finally:
        store.close()
    newest = MIDNIGHT - 7200 + 47 * 300
    assert at is not None and at % 3600 == 0 and newest < at <= newest + 3600
    assert window_ending(at, 4 * 3600, 3600).end == at


def test_exporter_on_the_clock_ends_windows_at_the_last_boundary(base) -> None:
    from driftline.exporter.collector import SnapshotCollector

    store = Store(base[-1])
    try:
        cfg = from_dict({"window": "4h"})
        col = SnapshotCollector(store, cfg, clock=lambda: AT)
        fams = {m.name: m for m in col.collect()}
        preds = [s for s in fams["driftline_window_predictions"].samples
                 if s.labels.get("variant") == "all" and s.labels.get("window") == "4h"]
        assert preds and preds[0].value == _before_at(4 * 3600) == 24  # rounding up would count 36
    finally:
        store.close()


def test_a_compacted_day_that_reaches_past_at_is_left_out(base, capsys) -> None:
    """A compacted day row holds the whole day: a window ending mid-day used to count all of it, future
    included; it now leaves that day out (it cannot be split)."""
    from driftline.storage.compaction import compact

    store = Store(base[-1])
    try:
        assert compact(store, MIDNIGHT + 86400).groups == 2
    finally:
        store.close()
    at = MIDNIGHT + 5400  # 01:30: the window [00:00, 01:00) lies inside the compacted day of MIDNIGHT
    assert cli.main([*base, "metrics", "--window", "1h", "--at", iso(at), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["window"]["end"] == iso(MIDNIGHT + 3600)
    assert doc["counts"]["predictions"] == 0  # the day's 24 predictions include 12 at or after 01:00
    assert cli.main([*base, "metrics", "--window", "1d", "--at", iso(MIDNIGHT + 86400), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["counts"]["predictions"] == 24  # a whole day is counted whole


def test_a_window_outside_the_stored_predictions_says_where_they_lie(base, capsys) -> None:
    """Tryout: `metrics --at 2030-01-01` (a wrong year) printed an all-empty table, exit 0, and no hint."""
    assert cli.main([*base, "metrics", "--at", "2030-01-01"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    newest = iso(MIDNIGHT + 7200)  # the end of the bucket holding the 01:55 prediction
    assert (f"no predictions in this window; the stored predictions of model 'fraud' lie in "
            f"{iso(MIDNIGHT - 7200)} → {newest} (`--at {newest}` ends a window at the newest)") in out, out
    assert cli.main([*base, "metrics", "--json", "--at", "2020-01-01"]) == 0  # before them too, and in the JSON
    assert "lie in" in json.loads(capsys.readouterr().out)["note"]
    assert cli.main([*base, "metrics", "--json", "--at", iso(MIDNIGHT), "--window", "1h"]) == 0
    assert json.loads(capsys.readouterr().out).get("note") is None  # a window holding predictions has no such note


@pytest.mark.parametrize("command", ["metrics", "calibration", "slices", "ab"])
def test_a_window_reaching_before_1970_is_shown_from_1970(base, capsys, command) -> None:
    """Tryout: `--at 1970-01-01` showed the window '1969-12-25 → 1970-01-01'; no event can be before 1970, so the
    window is shown from 1970-01-01 with the length it then has (the --at itself stays valid: test_cli_errors)."""
    assert cli.main([*base, command, "--at", "1970-01-03", "--json"]) == 0
    w = json.loads(capsys.readouterr().out)["window"]
    assert (w["start"], w["end"], w["seconds"], w["label"]) == ("1970-01-01T00:00:00Z", "1970-01-03T00:00:00Z",
                                                                2 * 86400, "2d")
    assert cli.main([*base, command, "--at", "1970-01-03"]) == 0
    out = capsys.readouterr().out
    assert "1969" not in out and "1970-01-01T00:00:00Z → 1970-01-03T00:00:00Z" in out, out
