"""Drift, calibration and slices readouts through the real pipeline on SQLite (driftline.simulate's stream:
seed 7, 2000 predictions a day for 22 days from 2026-01-01, drift from day 21; reference = first two weeks)."""

from __future__ import annotations

import json
import re
from datetime import datetime

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from driftline.analysis.calibration import calibration_report
from driftline.analysis.drift import SEVERITIES
from driftline.analysis.estimates import base_rate_effect, compare_estimate, early_warning, realised_metrics
from driftline.cli import main
from driftline.commands.simulate import write_stream
from driftline.config import load
from driftline.readouts.drift import drift_document, drift_readings, query_window
from driftline.readouts.slices import slices_document
from driftline.readouts.references import list_references, load_reference
from driftline.ingest.simulate import SimSpec
from driftline.core.stats import NEG, POS, UNL, BucketStats
from driftline.storage.store import Store
from driftline.readouts.windows import Window, merged, window_rows

from cli_helpers import SIM_CONFIG, cli_json, replay_through_cli
from helpers import outcome, pred

START = 1_767_225_600.0  # 2026-01-01T00:00:00Z
DAY = 86400.0
DAYS = 22
CONFIG = SIM_CONFIG + """\
slices: [country, channel]
targets: {recall: 0.7, fpr: 0.08}   # agreed targets: the slice ranking judges against these (no built-in ones)
"""


def _ts(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _events(path) -> tuple[list[dict], dict[str, tuple[int, float]]]:
    """Predictions of an events file and the outcomes by prediction id (label, ts)."""
    preds, outs = [], {}
    with open(path) as fh:
        for line in fh:
            ev = json.loads(line)
            if ev["type"] == "prediction":
                preds.append(ev)
            else:
                outs[ev["prediction_id"]] = (ev["label"], _ts(ev["ts"]))
    return preds, outs


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    """22 simulated days written as the `simulate` command does, replayed through the CLI, reference = days 0–13."""
    d = tmp_path_factory.mktemp("sim")
    events = d / "events.jsonl"
    write_stream(SimSpec(start=START, days=DAYS, per_day=2000, seed=7), START + DAYS * DAY, str(events))
    base, url, cfg = replay_through_cli(d, CONFIG, events, "sim.db")
    assert main([*base, "reference", "set", "--from", "2026-01-01T00:00:00Z", "--to", "2026-01-15T00:00:00Z"]) == 0
    store = Store(url)
    yield {"base": base, "store": store, "config": load(cfg), "events": events, "url": url}
    store.close()


def _small_db(tmp_path, seed: int = 3) -> tuple[list[str], Store, object, str]:
    events = tmp_path / "small.jsonl"
    write_stream(SimSpec(start=START, days=3, per_day=400, seed=seed, drift_day=None), START + 5 * DAY, str(events))
    base, url, cfg = replay_through_cli(tmp_path, CONFIG, events, "small.db")
    return base, Store(url), load(cfg), str(events)


# --- drift ---------------------------------------------------------------------------------------------
def test_drift_json_contract_through_the_cli(sim, capsys) -> None:
    doc = cli_json(capsys, *sim["base"], "drift", "--json", "--window", "7d", "--at", "2026-01-23T00:00:00Z")
    preds, _ = _events(sim["events"])
    ref_n = sum(START <= _ts(p["ts"]) < START + 14 * DAY for p in preds)
    cur_n = sum(START + 15 * DAY <= _ts(p["ts"]) < START + 22 * DAY for p in preds)
    assert {"id", "start", "end", "n"} <= doc["reference"].keys()
    assert doc["reference"]["n"] == ref_n and doc["reference"]["start"] == "2026-01-01T00:00:00Z"
    assert doc["window"]["n"] == cur_n and doc["window"]["start"] == "2026-01-16T00:00:00Z"
    assert {"start", "end", "n"} <= doc["window"].keys()
    assert len(doc["features"]) == 9
    common = {"feature", "kind", "psi", "js", "missing_share", "unseen_share", "noise_floor", "drifted", "severity"}
    for f in [*doc["features"], doc["score"]]:
        assert common <= f.keys() and "psi" in f["noise_floor"]
        test = f["ks"] if f["kind"] == "numeric" else f["chi2"]
        assert {"stat", "p_value", "p_adjusted"} <= test.keys()
        assert f["kind"] in ("numeric", "categorical")
        if f["kind"] == "numeric":
            assert "wasserstein" in f
    ranks = [(-SEVERITIES.index(f["severity"]), -f["psi"]) for f in doc["features"]]
    assert ranks == sorted(ranks)
    p = doc["prevalence"]
    assert {"reference", "current", "drifted"} <= p.keys() and {"value", "low", "high", "n"} <= p["current"].keys()


def test_simulated_drift_detected_on_its_first_day_and_not_in_the_week_before(sim) -> None:
    """Reference days 0–13; daily windows of days 14–20 call no drift; day 21 (drift start) calls amount and
    country, ranked first — within one day of the start."""
    store, cfg = sim["store"], sim["config"]
    for day in range(14, 21):
        doc = drift_document(store, cfg, "fraud", Window(START + day * DAY, START + (day + 1) * DAY))
        assert doc["drifted"] == [] and not doc["score"]["drifted"], (day, doc["drifted"])
    doc = drift_document(store, cfg, "fraud", Window(START + 21 * DAY, START + 22 * DAY))
    assert set(doc["drifted"]) == {"amount", "country"}
    assert {f["feature"] for f in doc["features"][:2]} == {"amount", "country"}
    readings = {r.feature: r for r in drift_readings(store, cfg, "fraud", Window(START + 21 * DAY, START + 22 * DAY),
                                                     None)}
    assert readings["country"].drifted and readings["amount"].drifted and not readings["hour"].drifted
    assert readings["country"].psi == doc["features"][[f["feature"] for f in doc["features"]].index("country")]["psi"]
    assert None in readings and readings[None].n == doc["window"]["n"]


def test_drift_section_of_the_config_sets_thresholds_and_reference_bins(sim, tmp_path, capsys) -> None:
    """drift.psi_warning/js above day 21's effects (country PSI ≈ 0.43, JS ≈ 0.27) call nothing; numeric_bins
    and top_k shape the next reference's frozen bins."""
    from driftline.config import from_dict

    strict = from_dict({"features": dict(sim["config"].features),
                        "drift": {"psi_warning": 0.6, "psi_alert": 0.8, "js": 0.5}})
    day21 = Window(START + 21 * DAY, START + 22 * DAY)
    doc = drift_document(sim["store"], strict, "fraud", day21)
    assert doc["drifted"] == [] and doc["thresholds"]["psi_warning"] == 0.6 and doc["thresholds"]["js"] == 0.5
    assert drift_document(sim["store"], sim["config"], "fraud", day21)["drifted"] != []
    base, store, _, _ = _small_db(tmp_path)
    cfg = tmp_path / "coarse.yaml"
    cfg.write_text(CONFIG + "drift: {numeric_bins: 4, top_k: 3}\n")
    got = cli_json(capsys, "--config", str(cfg), *base[2:], "reference", "set", "--from", "2026-01-01", "--to",
                   "2026-01-04", "--json")
    prof = load_reference(store, "fraud", got["id"]).profile()
    assert prof.settings.numeric_bins == 4 and prof.settings.top_k == 3
    assert len(prof.feature("amount").cuts) == 5 and prof.feature("country").categories == ("FR", "DE", "ES")
    store.close()


def test_no_reference_is_exit_code_2_with_the_remedy(tmp_path, capsys) -> None:
    base, store, cfg, _ = _small_db(tmp_path)
    capsys.readouterr()
    assert main([*base, "drift", "--json"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "run `driftline reference set` first" in err
    # the example names the stored history's first days (tryout: it suggested 2026-01-01 … 01-15 whatever was stored)
    assert "driftline reference set --model fraud --from 2026-01-01 --to 2026-01-04" in err.replace("` ", "`")
    assert drift_readings(store, cfg, "fraud", Window(START, START + DAY), None) == []
    store.close()


# --- references ----------------------------------------------------------------------------------------
def test_reference_from_file_equals_reference_from_the_same_events_ingested(tmp_path, capsys) -> None:
    base, store, cfg, events = _small_db(tmp_path)
    counters = store.counters()
    a = cli_json(capsys, *base, "reference", "set", "--from", "2026-01-01T00:00:00Z", "--to", "2026-01-04T00:00:00Z",
                 "--json")
    b = cli_json(capsys, *base, "reference", "set", "--file", events, "--json")
    assert store.counters() == counters  # --file never touches the store's join state or counters
    ra, rb = load_reference(store, "fraud", a["id"]), load_reference(store, "fraud", b["id"])
    assert ra.profile_json == rb.profile_json and (ra.confusion == rb.confusion).all()
    assert (a["source"], b["source"]) == ("window", "file") and a["n"] == b["n"]
    assert (a["start"], a["end"]) == (b["start"], b["end"]) == ("2026-01-01T00:00:00Z", "2026-01-04T00:00:00Z")
    preds, outs = _events(events)
    assert a["n"] == len(preds)
    assert a["prevalence"]["k"] == sum(outs[p["prediction_id"]][0] for p in preds if p["prediction_id"] in outs)
    store.close()


def test_reference_versions_latest_active_and_activate(tmp_path, capsys) -> None:
    base, store, cfg, _ = _small_db(tmp_path)
    first = cli_json(capsys, *base, "reference", "set", "--from", "2026-01-01", "--to", "2026-01-02", "--json")
    second = cli_json(capsys, *base, "reference", "set", "--from", "2026-01-02", "--to", "2026-01-04", "--json")
    listed = cli_json(capsys, *base, "reference", "list", "--json")
    assert [r["id"] for r in listed] == [second["id"], first["id"]] and second["id"] > first["id"]
    assert [r["active"] for r in listed] == [True, False]
    shown = cli_json(capsys, *base, "reference", "show", "--json")
    assert shown["id"] == second["id"] and shown["profile"]["n"] == second["n"]
    w = Window(START + 2 * DAY, START + 3 * DAY)
    assert drift_document(store, cfg, "fraud", w)["reference"]["id"] == second["id"]
    assert main([*base, "reference", "activate", str(first["id"])]) == 0
    assert [r.active for r in list_references(store, "fraud")] == [False, True]
    assert drift_document(store, cfg, "fraud", w)["reference"]["id"] == first["id"]
    assert main([*base, "reference", "activate", "999"]) == 2
    store.close()


# --- calibration ---------------------------------------------------------------------------------------
def test_calibration_document_equals_direct_calls_on_the_merged_window(sim, capsys) -> None:
    store, cfg = sim["store"], sim["config"]
    doc = cli_json(capsys, *sim["base"], "calibration", "--json", "--window", "7d")
    w = query_window(store, cfg, "fraud", 7 * DAY, None)
    assert doc["window"]["start"] == w.to_json()["start"]
    stats = merged(window_rows(store, "fraud", w, features=False))
    assert doc["calibration"] == calibration_report(stats).to_json()
    ref = load_reference(store, "fraud")
    assert doc["base_rate"] == {**base_rate_effect(stats, ref.confusion_stats(), ref.profile().prevalence).to_json(),
                                "over": "window"}  # explicit labels: the whole window (matured part: test_matured_part)
    assert doc["base_rate"]["source"] == "reference"
    ew = doc["early_warning"]
    assert ew == early_warning(stats, 0.5, "unlabelled").to_json() and ew["estimated"] and ew["recall"]["estimated"]
    assert ew["n"] == stats.conf[UNL].sum() > 0
    # one maturity period earlier: p95 label delay (explicit outcomes), rounded up to whole hours
    m = doc["matured"]
    period = m["maturity"]["seconds"]
    preds, outs = _events(sim["events"])
    delays = [outs[p["prediction_id"]][1] - _ts(p["ts"]) for p in preds if p["prediction_id"] in outs]
    exact = float(np.quantile(delays, 0.95))
    assert m["maturity"]["method"] == "label_delay_p95" and period % 3600 == 0
    assert abs(period - exact) <= 0.09 * exact + 3600
    old = merged(window_rows(store, "fraud", Window(w.start - period, w.end - period), features=False))
    assert m["comparison"] == compare_estimate(early_warning(old, 0.5, "all"), realised_metrics(old)).to_json()
    assert m["comparison"]["coverage"]["value"] > 0.9


def test_seed000_base_rate_precision_0197_at_2_percent(tmp_path, capsys) -> None:
    """Seed 000: recall 0.80 and FPR 6/90 from a 10 % fraud sample (precision 8/14 = 0.571) imply
    precision 1,600 / 8,133 = 0.197 at the 2 % prevalence of real traffic."""
    ref = BucketStats()
    ref.conf[POS, 1], ref.conf[POS, 0], ref.conf[NEG, 1], ref.conf[NEG, 0] = 8, 2, 6, 84
    cur = BucketStats()
    cur.conf[POS, 1], cur.conf[POS, 0], cur.conf[NEG, 1], cur.conf[NEG, 0] = 1600, 400, 6533, 91467
    direct = base_rate_effect(cur, ref)
    assert round(direct.implied_precision, 3) == 0.197 and round(direct.implied_precision_at_reference, 3) == 0.571
    # the same through the pipeline: the reference from a file of the sample, current traffic ingested
    sample, t0 = [], START
    for i in range(100):
        fraud, flagged = i < 10, (i < 8) or (10 <= i < 16)
        sample.append(pred(f"s{i}", 0.9 if flagged else 0.1, t0 + i * 60))
        sample.append(outcome(f"s{i}", int(fraud), t0 + i * 60 + 3600))
    traffic = []
    for i in range(1000):
        traffic.append(pred(f"t{i}", 0.3, t0 + 10 * DAY + i * 60))
        traffic.append(outcome(f"t{i}", int(i % 50 == 0), t0 + 10 * DAY + i * 60 + 3600))
    (tmp_path / "sample.jsonl").write_bytes(b"\n".join(sample) + b"\n")
    (tmp_path / "traffic.jsonl").write_bytes(b"\n".join(traffic) + b"\n")
    base = ["--db", f"sqlite:///{tmp_path / 'b.db'}"]
    assert main([*base, "replay", str(tmp_path / "traffic.jsonl")]) == 0
    cli_json(capsys, *base, "reference", "set", "--file", str(tmp_path / "sample.jsonl"), "--json")
    doc = cli_json(capsys, *base, "calibration", "--json", "--window", "7d")
    br = doc["base_rate"]
    assert br["source"] == "reference" and br["prevalence"]["current"]["value"] == 0.02
    assert br["prevalence"]["reference"] == 0.1
    assert round(br["implied_precision"]["value"], 3) == 0.197
    assert round(br["implied_precision_at_reference"], 3) == 0.571


# --- slices --------------------------------------------------------------------------------------------
def test_slices_counts_equal_direct_counts_from_the_events(sim, capsys) -> None:
    doc = cli_json(capsys, *sim["base"], "slices", "--json", "--window", "7d", "--at", "2026-01-23T00:00:00Z")
    preds, outs = _events(sim["events"])
    lo, hi = START + 15 * DAY, START + 22 * DAY
    expect: dict[str, np.ndarray] = {}
    for p in preds:
        if not lo <= _ts(p["ts"]) < hi:
            continue
        o = outs.get(p["prediction_id"])
        state = UNL if o is None else o[0]
        expect.setdefault(p["features"]["country"], np.zeros((3, 2), np.int64))[state, int(p["score"] >= 0.5)] += 1
    by_feature = {f["feature"]: f["values"] for f in doc["features"]}
    assert set(by_feature) == {"country", "channel"}
    got = {s["value"]: s for s in by_feature["country"]}
    assert set(got) == set(expect)
    for value, c in expect.items():
        s = got[value]
        assert s["counts"] == {"predictions": int(c.sum()), "labelled": int(c[:2].sum()), "tp": int(c[POS, 1]),
                               "fp": int(c[NEG, 1]), "fn": int(c[POS, 0]), "tn": int(c[NEG, 0]),
                               "unlabelled": int(c[UNL].sum())}
        lo_w, hi_w = proportion_confint(int(c[POS, 1]), int(c[POS].sum()), method="wilson")
        assert s["recall"]["low"] == pytest.approx(lo_w, abs=1e-12) and s["recall"]["high"] == pytest.approx(hi_w, abs=1e-12)
        lo_f, hi_f = proportion_confint(int(c[NEG, 1]), int(c[NEG].sum()), method="wilson")
        assert s["fpr"]["low"] == pytest.approx(lo_f, abs=1e-12)
        assert s["alert_rate"]["k"] == int(c[:, 1].sum()) and s["indicative"] == (c[:2].sum() < 30)
        assert s["recall"]["indicative"] == (c[POS].sum() < 30)
        assert s["shortfall"] == pytest.approx(max(0.7 - hi_w, lo_f - 0.08))
    worst = doc["worst"]
    assert all(s["shortfall"] > 0 for s in worst)
    assert [s["shortfall"] for s in worst] == sorted((s["shortfall"] for s in worst), reverse=True)
    every = [s for vals in by_feature.values() for s in vals]
    assert len(worst) == sum(s["shortfall"] > 0 for s in every)
    assert doc["targets"] == {"recall": 0.7, "fpr": 0.08}


def test_slices_document_without_configured_slices_says_so(sim) -> None:
    from driftline.config import from_dict

    doc = slices_document(sim["store"], from_dict({}), "fraud", Window(START, START + DAY))
    assert doc["features"] == [] and doc["worst"] == [] and "slices:" in doc["note"]
    preds, _ = _events(sim["events"])
    assert doc["window"]["n"] == sum(START <= _ts(p["ts"]) < START + DAY for p in preds)


def test_slices_judge_no_target_that_nobody_agreed(sim) -> None:
    """Without `targets:` or a model-wide recall/fpr trigger there is no target (no built-in fraud 0.70 / 0.08):
    no shortfall, no worst slices. Found trying a churn model: 'worst slices (interval beyond recall 0.6 / FPR
    0.08)' with no FPR target configured."""
    from driftline.config import from_dict

    doc = slices_document(sim["store"], from_dict({"slices": ["country"]}), "fraud", Window(START, START + DAY))
    assert doc["targets"] == {"recall": None, "fpr": None} and doc["worst"] == []
    assert all(v["shortfall"] is None for f in doc["features"] for v in f["values"])
    doc = slices_document(sim["store"], from_dict({"slices": ["country"], "targets": {"recall": 0.6}}), "fraud",
                          Window(START, START + DAY))
    assert doc["targets"] == {"recall": 0.6, "fpr": None}
    assert all(v["shortfall_metric"] in (None, "recall") for f in doc["features"] for v in f["values"])


# --- the human-readable CLI output ---------------------------------------------------------------------
def test_tables_render(sim, capsys) -> None:
    for cmd in (["drift", "--window", "1d", "--at", "2026-01-23T00:00:00Z"], ["calibration"], ["slices"],
                ["reference", "list"], ["reference", "show"]):
        assert main([*sim["base"], *cmd]) == 0, cmd
    out = capsys.readouterr().out
    for text in ("country", "alert", "reliability (equal-width bins)", "early warning", "worst slices",
                 "reference versions", "tracked features"):
        assert text in out, text


@pytest.mark.postgres
def test_reference_versions_on_postgresql(pg_url, tmp_path) -> None:
    """The same table and functions on PostgreSQL: ids grow, one active version, activate rolls back."""
    from driftline.readouts.references import activate_reference, build_reference_profile, file_stats, save_reference

    cfg_path = tmp_path / "driftline.yaml"
    cfg_path.write_text(CONFIG)
    cfg = load(cfg_path)
    events = tmp_path / "e.jsonl"
    write_stream(SimSpec(start=START, days=1, per_day=300, seed=5, drift_day=None), START + 2 * DAY, str(events))
    stats, lo, hi, dead = file_stats(str(events), cfg, "fraud")
    assert dead == 0 and (lo, hi) == (START, START + DAY)
    store = Store(pg_url)
    store.migrate()
    profile = build_reference_profile(stats, cfg)
    a = save_reference(store, "fraud", profile, "file", lo, hi, confusion=stats, detail=str(events))
    b = save_reference(store, "fraud", profile, "file", lo, hi, confusion=stats)
    assert b > a and [r.active for r in list_references(store, "fraud")] == [True, False]
    activate_reference(store, "fraud", a)
    ref = load_reference(store, "fraud")
    assert ref.id == a and ref.profile_json == profile.to_json() and (ref.confusion == stats.conf).all()
    store.close()


def test_provider_feeds_exporter_series_and_drift_triggers(sim, capsys) -> None:
    """drift_readings plugged into the exporter (SnapshotCollector(drift=…)) and the trigger runner gives the
    PSI that `driftline drift --json` reports for the same window."""
    from prometheus_client.core import CollectorRegistry

    from driftline.config import from_dict
    from driftline.exporter.collector import SnapshotCollector
    from driftline.triggers import runner

    store = sim["store"]
    cfg = from_dict({"features": dict(sim["config"].features), "window": "1d", "triggers": [
        {"name": "country_psi", "metric": "psi", "feature": "country", "op": ">=", "value": 0.25, "window": "1d",
         "min_n": 100}]})
    doc = cli_json(capsys, *sim["base"], "drift", "--json", "--window", "1d")
    country = next(f for f in doc["features"] if f["feature"] == "country")
    reg = CollectorRegistry()
    reg.register(SnapshotCollector(store, cfg, time_basis="event", drift=drift_readings))
    labels = {"model": "fraud", "window": "1d", "feature": "country"}
    assert reg.get_sample_value("driftline_feature_psi", labels) == pytest.approx(country["psi"], rel=1e-12)
    assert reg.get_sample_value("driftline_feature_drifted", labels) == 1.0
    assert reg.get_sample_value("driftline_score_psi", {"model": "fraud", "window": "1d"}) == pytest.approx(
        doc["score"]["psi"], rel=1e-12)
    end = _ts(doc["window"]["end"])
    run = runner.run(store, cfg, now=end, at=end, drift=drift_readings, persist=False)
    (ev,) = run.evaluations
    assert ev.state.value == pytest.approx(country["psi"], rel=1e-12) and ev.state.n == doc["window"]["n"]


def test_printed_brier_equation_balances(sim, capsys) -> None:
    """The printed Brier decomposition adds up: a user saw 0.1477 = 0.0174 − 0.0820 + 0.2128 (0.1482) because
    the within-bin term (within_bin_variance − within_bin_covariance, in --json) was left out."""
    assert main([*sim["base"], "calibration"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    m = re.search(r"Brier (\d\.\d{4}) = reliability (\d\.\d{4}) − resolution (\d\.\d{4}) \+ uncertainty "
                  r"(\d\.\d{4}) ([+−]) within-bin (\d\.\d{4})", out)
    assert m, out
    brier, rel, res, unc, sign, within = (float(g) if g not in "+−" else g for g in m.groups())
    rhs = rel - res + unc + (within if sign == "+" else -within)
    assert abs(rhs - brier) <= 4 * 0.5e-4 + 1e-9  # four rounded terms on the right, one on the left
    br = cli_json(capsys, *sim["base"], "calibration", "--json")["calibration"]["brier"]
    assert f"{abs(br['within_bin_variance'] - br['within_bin_covariance']):.4f}" == m.group(6)


def test_reference_show_takes_the_version_as_activate_does(tmp_path, capsys) -> None:
    """README's `reference list|show|activate N`: `reference show 1` was refused ('unrecognized arguments: 1', new-user
    tryout); the version may be given as `activate` takes it, or as --id, never two different ones."""
    base, store, _, _ = _small_db(tmp_path)
    first = cli_json(capsys, *base, "reference", "set", "--from", "2026-01-01", "--to", "2026-01-02", "--json")
    second = cli_json(capsys, *base, "reference", "set", "--from", "2026-01-02", "--to", "2026-01-04", "--json")
    assert cli_json(capsys, *base, "reference", "show", str(first["id"]), "--json")["id"] == first["id"]
    assert cli_json(capsys, *base, "reference", "show", "--id", str(first["id"]), "--json")["id"] == first["id"]
    assert cli_json(capsys, *base, "reference", "show", "--json")["id"] == second["id"]
    assert main([*base, "reference", "show", str(first["id"]), "--id", str(second["id"])]) == 2
    assert "differ" in capsys.readouterr().err
    assert main([*base, "reference", "show", "999"]) == 2
    assert "no reference 999" in capsys.readouterr().err
    store.close()
