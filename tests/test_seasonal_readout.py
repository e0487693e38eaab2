"""Seasonal references through the CLI and the readouts on the demo's simulated stream (driftline.simulate: four
weeks from Monday 2026-11-02 00:00 UTC, 5,000 predictions a day, drift from day 21 = 2026-11-23; the feature
`hour` is the UTC hour of day, so a 1-hour window against a whole-day reference always looks drifted)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from scipy.stats import binom

from driftline.cli import main
from driftline.commands.simulate import write_stream
from driftline.config import load
from driftline.ingest.simulate import SimSpec
from driftline.readouts.drift import drift_document
from driftline.readouts.references import list_references
from driftline.readouts.windows import Window
from driftline.storage.store import Store

from cli_helpers import SIM_CONFIG, cli_json, replay_through_cli

START = 1_793_577_600.0  # 2026-11-02T00:00:00Z, a Monday (the demo's first week)
DAY, HOUR = 86400.0, 3600.0
CONFIG = SIM_CONFIG
REF = ["reference", "set", "--from", "2026-11-02T00:00:00Z", "--to", "2026-11-16T00:00:00Z", "--json"]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo's four weeks replayed through the CLI; references (weeks 1–2): plain, hour_of_day, both."""
    d = tmp_path_factory.mktemp("seasonal")
    events = d / "events.jsonl"
    write_stream(SimSpec(start=START, days=28, per_day=5000, seed=7, drift_day=21.0), START + 28 * DAY, str(events))
    base, url, cfg = replay_through_cli(d, CONFIG, events, "demo.db")
    for s in ("none", "hour_of_day", "both"):
        assert main([*base, *REF[:-1], "--seasonality", s]) == 0
    store = Store(url)
    refs = {r.seasonality: r.id for r in list_references(store, "fraud")}
    yield {"base": base, "store": store, "config": load(cfg), "refs": refs, "dir": d}
    store.close()


def _activate(demo, seasonality: str) -> None:
    assert main([*demo["base"], "reference", "activate", str(demo["refs"][seasonality])]) == 0


def _alarm(doc: dict) -> bool:
    return bool(doc["drifted"]) or bool(doc["score"] and doc["score"]["drifted"]) or doc["prevalence"]["drifted"]


def test_reference_set_and_show_report_the_seasons(demo, capsys) -> None:
    base = demo["base"]
    doc = cli_json(capsys, *base, "reference", "show", "--json", "--id", str(demo["refs"]["hour_of_day"]))
    assert doc["seasonality"] == "hour_of_day" and doc["seasons"]["possible"] == 24
    slices = doc["seasons"]["slices"]
    assert [s["season"] for s in slices] == [f"{h:02d}:00" for h in range(24)]
    assert all(s["hours"] == 14 for s in slices) and sum(s["n"] for s in slices) == doc["n"]
    both = cli_json(capsys, *base, "reference", "show", "--json", "--id", str(demo["refs"]["both"]))
    assert both["seasons"]["possible"] == 168 and len(both["seasons"]["slices"]) == 168
    assert {s["hours"] for s in both["seasons"]["slices"]} == {2}
    assert both["seasons"]["slices"][25]["season"] == "Tue 01:00"
    plain = cli_json(capsys, *base, "reference", "show", "--json", "--id", str(demo["refs"]["none"]))
    assert plain["seasonality"] == "none" and "seasons" not in plain
    listed = cli_json(capsys, *base, "reference", "list", "--json")
    assert {r["id"]: r["seasonality"] for r in listed} == {v: k for k, v in demo["refs"].items()}
    capsys.readouterr()
    assert main([*base, "reference", "show", "--id", str(demo["refs"]["hour_of_day"])]) == 0
    assert "seasonality hour_of_day (UTC): 24 of 24 seasons seen, 14 reference hours" in " ".join(
        capsys.readouterr().out.split())


def test_calm_hour_flags_hour_against_the_plain_reference_and_nothing_against_the_seasonal(demo, capsys) -> None:
    base = demo["base"]
    argv = [*base, "drift", "--json", "--window", "1h", "--at", "2026-11-17T01:00:00Z"]
    _activate(demo, "none")
    plain = cli_json(capsys, *argv)
    assert "hour" in plain["drifted"] and plain["seasonality"] == {"seasonality": "none"}
    _activate(demo, "hour_of_day")
    doc = cli_json(capsys, *argv)
    assert doc["drifted"] == [] and not _alarm(doc)
    s = doc["seasonality"]
    assert s["seasonality"] == "hour_of_day" and s["fallback"]["seasons"] == [] and s["fallback"]["window_n"] == 0
    (use,) = s["seasons"]
    assert use["season"] == "00:00" and use["reference_hours"] == 14 and use["window_n"] == doc["window"]["n"]
    hour = next(f for f in doc["features"] if f["feature"] == "hour")
    assert hour["n_reference"] == use["reference_n"] == s["reference_n_effective"]  # one season: its slice exactly
    capsys.readouterr()
    assert main(argv[:-5] + argv[-4:]) == 0  # text rendering
    text = " ".join(capsys.readouterr().out.split())
    assert ("seasonal reference (hour_of_day, UTC): window seasons 00:00 compared with their own reference slices"
            in text)


@pytest.mark.slow
@pytest.mark.parametrize("seasonality", ["hour_of_day", "both"])
def test_calm_week_of_hourly_windows_stays_within_the_documented_false_alarm_rate(demo, seasonality) -> None:
    """Every 1-hour window of week 3 (calm): at most what alpha per report allows (99.9 % binomial bound); the plain
    reference flags nearly every one of them (`hour`), so the test can fail."""
    _activate(demo, seasonality)
    store, cfg = demo["store"], demo["config"]
    t0 = START + 14 * DAY
    windows = [Window(t0 + h * HOUR, t0 + (h + 1) * HOUR) for h in range(168)]
    alarms = [w for w in windows if _alarm(drift_document(store, cfg, "fraud", w))]
    assert len(alarms) <= binom.ppf(0.999, len(windows), cfg.drift.alpha), [w.start for w in alarms]
    _activate(demo, "none")
    plain = sum("hour" in drift_document(store, cfg, "fraud", w)["drifted"] for w in windows[:24])
    assert plain >= 20


def test_week_four_drift_is_still_found_in_hourly_and_daily_windows(demo) -> None:
    _activate(demo, "hour_of_day")
    store, cfg = demo["store"], demo["config"]
    t0 = START + 21 * DAY
    daily = drift_document(store, cfg, "fraud", Window(t0, t0 + DAY))
    assert set(daily["drifted"]) == {"amount", "country"}
    assert len(daily["seasonality"]["seasons"]) == 24 and daily["seasonality"]["fallback"]["window_n"] == 0
    hourly = [drift_document(store, cfg, "fraud", Window(t0 + h * HOUR, t0 + (h + 1) * HOUR)) for h in range(24)]
    found = [bool({"amount", "country"} & set(d["drifted"])) for d in hourly]
    assert sum(found) >= 20, found
    assert not any("hour" in d["drifted"] for d in hourly)


def test_thin_seasons_fall_back_to_the_whole_reference_and_say_so(demo, tmp_path, capsys) -> None:
    _activate(demo, "both")
    cfg = tmp_path / "thin.yaml"
    cfg.write_text(CONFIG + "drift: {season_min_n: 1000}\n")  # every `both` slice holds ~420 predictions
    argv = ["--config", str(cfg), *demo["base"][2:], "drift", "--json", "--window", "1h", "--at",
            "2026-11-17T01:00:00Z"]
    doc = cli_json(capsys, *argv)
    s = doc["seasonality"]
    assert s["fallback"]["seasons"] == ["Tue 00:00"] and s["fallback"]["window_n"] == doc["window"]["n"]
    assert s["seasons"][0]["fallback"] == "thin" and "season_min_n" in s["fallback"]["rule"]
    assert "hour" in doc["drifted"]  # compared with the whole reference again
    capsys.readouterr()
    assert main(argv[:-5] + argv[-4:]) == 0
    assert "fallback: Tue 00:00" in " ".join(capsys.readouterr().out.split())


def test_exporter_exports_the_seasonality_and_the_fallback_count(demo) -> None:
    from prometheus_client.core import CollectorRegistry

    from driftline.config import from_dict
    from driftline.exporter.collector import SnapshotCollector
    from driftline.readouts.drift import drift_readings

    _activate(demo, "hour_of_day")
    reg = CollectorRegistry()
    cfg = from_dict({"features": dict(demo["config"].features), "window": "1d", "drift": {"season_min_n": 2900}})
    reg.register(SnapshotCollector(demo["store"], cfg, time_basis="event", drift=drift_readings))
    assert reg.get_sample_value("driftline_reference_seasonality_info",
                                {"model": "fraud", "seasonality": "hour_of_day"}) == 1.0
    got = reg.get_sample_value("driftline_drift_season_fallback_predictions", {"model": "fraud", "window": "1d"})
    end = Window(START + 27 * DAY, START + 28 * DAY)
    doc = drift_document(demo["store"], cfg, "fraud", end)
    assert got == doc["seasonality"]["fallback"]["window_n"] > 0  # the slices under 2,900 predictions fell back


def test_weekly_report_says_which_seasonality(demo, tmp_path, capsys) -> None:
    _activate(demo, "hour_of_day")
    assert main([*demo["base"], "report", "--week", "2026-W48", "--out", str(tmp_path)]) == 0
    md = (tmp_path / "report-fraud-2026-W48.md").read_text()
    assert "Seasonal reference (hour\\_of\\_day, UTC)" in md
    html = (tmp_path / "report-fraud-2026-W48.html").read_text()
    assert "Seasonal reference (hour_of_day, UTC)" in html


def test_bad_seasonality_settings_fail_naming_the_field(demo, tmp_path, capsys) -> None:
    base = demo["base"]
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(CONFIG + "drift: {seasonality: hourly}\n")
    capsys.readouterr()
    assert main(["--config", str(cfg), *base[2:], "drift", "--window", "1h"]) == 2
    assert "drift.seasonality" in capsys.readouterr().err
    cfg.write_text(CONFIG + "bucket: 1d\nwindow: 7d\ndrift: {seasonality: hour_of_day}\n")
    assert main(["--config", str(cfg), *base[2:], "drift", "--window", "1d"]) == 2
    assert "`drift.seasonality`: hour_of_day needs buckets that divide an hour" in capsys.readouterr().err
    assert main([*base, "reference", "set", "--file", str(tmp_path / "none.jsonl"), "--seasonality", "both"]) == 2
    assert "needs stored buckets" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*base, *REF, "--seasonality", "weekly"])


def test_demo_sets_a_seasonal_reference_when_the_config_asks(tmp_path, capsys) -> None:
    """`driftline demo` with `drift.seasonality: hour_of_day` in the config: its weeks 1–2 reference keeps hour-of-day
    slices, and a calm week-3 hour is compared with its own hour's slice."""
    cfg = tmp_path / "demo.yaml"
    cfg.write_text("drift: {seasonality: hour_of_day}\n")
    base = ["--config", str(cfg), "--db", f"sqlite:///{tmp_path / 'demo.db'}"]
    assert main([*base, "demo", "--per-day", "400", "--workdir", str(tmp_path / "w"), "--port", "0"]) == 0
    assert "seasonality hour_of_day" in capsys.readouterr().err
    ref = cli_json(capsys, *base, "reference", "show", "--json")
    assert ref["seasonality"] == "hour_of_day" and len(ref["seasons"]["slices"]) == 24
    start = cli_json(capsys, *base, "drift", "--json", "--window", "1d")["window"]["start"]  # week 4's Sunday
    week3_tue_1am = datetime.fromisoformat(start.replace("Z", "+00:00")) - timedelta(days=12, hours=-1)
    doc = cli_json(capsys, *base, "drift", "--json", "--window", "1h", "--at", week3_tue_1am.isoformat())
    (use,) = doc["seasonality"]["seasons"]
    assert use["season"] == "00:00" and use["reference_hours"] == 14 and use["fallback"] is None
    assert "hour" not in doc["drifted"]


def test_seasonal_reference_on_postgresql(pg_url, tmp_path, capsys) -> None:
    """The same commands on PostgreSQL: the slices are stored in reference_seasons and read back identically."""
    events = tmp_path / "e.jsonl"
    write_stream(SimSpec(start=START, days=3, per_day=600, seed=5, drift_day=None), START + 3 * DAY, str(events))
    base = replay_through_cli(tmp_path, CONFIG, events, pg_url).base
    doc = cli_json(capsys, *base, "reference", "set", "--from", "2026-11-02T00:00:00Z", "--to",
                   "2026-11-04T00:00:00Z", "--seasonality", "both", "--json")
    assert doc["seasonality"] == "both" and len(doc["seasons"]["slices"]) == 48
    shown = cli_json(capsys, *base, "reference", "show", "--json")
    assert shown["seasons"] == doc["seasons"] and shown["id"] == doc["id"]
    drift = cli_json(capsys, *base, "drift", "--json", "--window", "1h", "--at", "2026-11-04T06:00:00Z")
    (use,) = drift["seasonality"]["seasons"]
    assert use["season"] == "Wed 05:00" and use["fallback"] == "no_reference_hours"  # the reference has no Wednesday
    assert [r["seasonality"] for r in cli_json(capsys, *base, "reference", "list", "--json")][0] == "both"
