"""Calibration's "Estimated vs realised" over compacted history reads the same before and after `driftline compact`
(verify tryout: 40 days replayed with labels.horizon 14d, `calibration --at <midnight> --window 7d` read the matured
window 2026-10-25T19:00 → 2026-11-01T19:00 with 10,391 predictions before compaction and 8,930 after: the
look-back of 149 h cut two compacted days, which a window leaves out whole, and nothing said so; the weekly report's
comparison changed the same way). The look-back is now whole days there, so the window holds whole day rows."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timezone
from pathlib import Path

import pytest

from driftline.cli import main
from driftline.storage.compaction import compact
from driftline.storage.store import Store

from helpers import close_docs


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    capsys.readouterr()
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_matured_comparison_reads_the_same_before_and_after_compaction(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    events, cfg = tmp_path / "ev.jsonl", tmp_path / "c.yaml"
    cfg.write_text("labels:\n  horizon: 14d\n")
    assert main(["simulate", "--days", "40", "--per-day", "300", "--seed", "3", "--end", "2026-11-30T00:00:00Z",
                 "--out", str(events)]) == 0
    base = ["--config", str(cfg), "--db", f"sqlite:///{tmp_path / 'c.db'}"]
    assert main([*base, "replay", str(events)]) == 0
    read = [*base, "calibration", "--json", "--window", "7d", "--at", "2026-11-08T00:00:00Z"]
    before = _json(capsys, *read)["matured"]
    assert before["maturity"]["seconds"] % 3600 == 0
    done = _json(capsys, *base, "compact", "--json")
    assert done["groups"] > 0 and done["cutoff"] > before["window"]["start"]  # the matured window is compacted
    after = _json(capsys, *read)["matured"]
    assert after["window"] == before["window"]
    assert close_docs(after["comparison"], before["comparison"])  # sums merged in another order: last digits differ


def test_a_label_landing_on_a_compacted_day_leaves_mid_day_windows_readable(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Verify tryout: `compact` with labels.horizon lowered from 14d to 7d merged days whose predictions still
    waited for outcomes; 20 late outcomes (5 here) then wrote hourly rows next to the day rows (+20 positives, −20
    unlabelled, no prediction), and `metrics --at 2026-11-17T12:00:00Z --window 12h` ended in 'unexpected
    ValueError: invalid proportion 20/0' (exit 1): the window left out the day row it cut but kept those rows."""
    events, long, short = tmp_path / "ev.jsonl", tmp_path / "long.yaml", tmp_path / "short.yaml"
    long.write_text("labels:\n  horizon: 14d\n")
    short.write_text("labels:\n  horizon: 7d\n")
    assert main(["simulate", "--days", "30", "--per-day", "300", "--seed", "3", "--end", "2026-11-30T00:00:00Z",
                 "--out", str(events)]) == 0
    db = ["--db", f"sqlite:///{tmp_path / 'c.db'}"]
    assert main(["--config", str(long), *db, "replay", str(events)]) == 0
    rows = [json.loads(line) for line in events.read_text().splitlines()]
    labelled = {e["prediction_id"] for e in rows if e["type"] == "outcome"}
    waiting = [e["prediction_id"] for e in rows if e["type"] == "prediction" and e["prediction_id"] not in labelled
               and "2026-11-17" <= e["ts"] < "2026-11-18"][:5]
    assert len(waiting) == 5
    day = ["metrics", "--json", "--window", "1d", "--at", "2026-11-18T00:00:00Z"]
    before = _json(capsys, "--config", str(long), *db, *day)["counts"]
    # `driftline compact` no longer merges days predictions still wait in (test below); a database compacted so
    # before that guard, or by the storage call with its own cutoff, still reads right:
    store = Store(f"sqlite:///{tmp_path / 'c.db'}")
    assert compact(store, datetime(2026, 11, 19, tzinfo=timezone.utc).timestamp()).groups > 0
    store.close()
    late = tmp_path / "late.jsonl"
    late.write_text("".join(json.dumps({"type": "outcome", "prediction_id": p, "ts": "2026-11-29T23:59:00Z",
                                        "label": 1}) + "\n" for p in waiting))
    assert main(["--config", str(long), *db, "replay", str(late)]) == 0
    whole = _json(capsys, "--config", str(long), *db, *day)["counts"]
    assert (whole["positives"], whole["unlabelled"]) == (before["positives"] + 5, before["unlabelled"] - 5)
    part = _json(capsys, "--config", str(long), *db, "metrics", "--json", "--window", "12h",
                 "--at", "2026-11-17T12:00:00Z")
    assert part["window"]["cut_days"] == ["2026-11-17T00:00:00Z"] and part["counts"]["labelled"] == 0


def test_a_reference_range_cutting_a_compacted_day_leaves_that_day_out(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Verify tryout: after `compact`, `reference set --from 2026-11-17T00:00:00Z --to 2026-11-18T12:00:00Z` read
    the day row of 2026-11-18 whole (a day of predictions past --to) and set a reference of two days."""
    events, cfg = tmp_path / "ev.jsonl", tmp_path / "c.yaml"
    cfg.write_text("labels:\n  horizon: 7d\n")
    assert main(["simulate", "--days", "30", "--per-day", "200", "--seed", "3", "--end", "2026-11-30T00:00:00Z",
                 "--out", str(events)]) == 0
    db = ["--config", str(cfg), "--db", f"sqlite:///{tmp_path / 'c.db'}"]
    assert main([*db, "replay", str(events)]) == 0
    assert _json(capsys, *db, "compact", "--json")["cutoff"] > "2026-11-19"
    day = _json(capsys, *db, "metrics", "--json", "--window", "1d", "--at", "2026-11-18T00:00:00Z")["counts"]
    capsys.readouterr()
    assert main([*db, "reference", "set", "--from", "2026-11-17T00:00:00Z", "--to", "2026-11-18T12:00:00Z"]) == 0
    shown = capsys.readouterr().out
    assert f"{day['predictions']:,} predictions" in shown.replace("\n", " ")


def test_seasonal_slices_of_a_range_cutting_a_compacted_day_hold_the_profiles_predictions(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The seasonal slices of a reference read store.buckets over the range while its profile reads window_rows
    (2a62762): a range ending inside a compacted day put that day's whole row into a season slice and not into the
    profile, so the slices held predictions the reference never had."""
    events, cfg = tmp_path / "ev.jsonl", tmp_path / "c.yaml"
    cfg.write_text("labels:\n  horizon: 7d\n")
    assert main(["simulate", "--days", "30", "--per-day", "240", "--end", "2026-11-30T00:00:00Z",
                 "--out", str(events)]) == 0
    db = ["--config", str(cfg), "--db", f"sqlite:///{tmp_path / 's.db'}"]
    assert main([*db, "replay", str(events)]) == 0
    assert _json(capsys, *db, "compact", "--json")["groups"] > 0
    doc = _json(capsys, *db, "reference", "set", "--from", "2026-11-10T00:00:00Z", "--to", "2026-11-11T12:00:00Z",
                 "--seasonality", "day_of_week", "--json")
    tuesday = _json(capsys, *db, "metrics", "--json", "--window", "1d", "--at", "2026-11-11T00:00:00Z")["counts"]
    assert doc["n"] == tuesday["predictions"] > 0  # the profile: Tuesday 11-10 only
    drift = _json(capsys, *db, "drift", "--json", "--window", "1d", "--at", "2026-11-20T00:00:00Z")
    assert drift["seasonality"]["seasons_in_reference"] == 1  # Wednesday 11-11 is cut, so left out whole


def test_compact_never_merges_a_day_whose_predictions_still_wait_for_labels(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`compact` with a shorter labels.horizon than the service's (verify tryout: 7d against 14d) merged days whose
    predictions were still held for joining, so their late labels wrote hourly rows into merged days. The cutoff now
    stops at the day of the oldest prediction still held: late labels land on hourly rows only."""
    events, long, short = tmp_path / "ev.jsonl", tmp_path / "long.yaml", tmp_path / "short.yaml"
    long.write_text("labels:\n  horizon: 14d\n")
    short.write_text("labels:\n  horizon: 7d\n")
    assert main(["simulate", "--days", "30", "--per-day", "300", "--seed", "3", "--end", "2026-11-30T00:00:00Z",
                 "--out", str(events)]) == 0
    url = f"sqlite:///{tmp_path / 'c.db'}"
    assert main(["--config", str(long), "--db", url, "replay", str(events)]) == 0
    with sqlite3.connect(tmp_path / "c.db") as conn:
        oldest = conn.execute("SELECT min(ts) FROM predictions").fetchone()[0]
    done = _json(capsys, "--config", str(short), "--db", url, "compact", "--json")
    cutoff = datetime.fromisoformat(done["cutoff"].replace("Z", "+00:00")).timestamp()
    assert done["groups"] > 0 and cutoff == oldest // 86400 * 86400  # 7d alone would reach 2026-11-22
    with sqlite3.connect(tmp_path / "c.db") as conn:
        merged_after = conn.execute("SELECT count(*) FROM buckets WHERE shard = -1 AND bucket_start >= ?",
                                    (cutoff,)).fetchone()[0]
    assert merged_after == 0
