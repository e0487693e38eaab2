"""Issue 17 part 2: models other than the fraud example are first-class. A `churn` stream (three variants named
control/treatment/holdout, 20–40 day label delays, other feature names) through the CLI: which model a command
reads, unknown models, label maturity and --matured, A/B label balance at 0 % coverage, slices configured after
ingestion, one timestamp rule, idempotent references and the A/B header for any variant names.

Counts and quantiles are checked against the generated events themselves (numpy over the raw lines)."""

from __future__ import annotations

import itertools
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from driftline.cli import main

from churn_sim import write_churn
from helpers import pred

T0 = 1_788_220_800.0  # 2026-09-01T00:00:00Z
DAYS = 60
HOUR = 3600


def _ts(text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _events(path: Path) -> tuple[dict[str, dict], dict[str, dict]]:
    """Predictions and outcomes of a JSON-lines file, by prediction id."""
    preds, outs = {}, {}
    for line in path.read_bytes().splitlines():
        ev = json.loads(line)
        (preds if ev["type"] == "prediction" else outs)[ev["prediction_id"]] = ev
    return preds, outs


def _run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    cap = capsys.readouterr()
    return code, cap.out, cap.err


@pytest.fixture(scope="module")
def churn(tmp_path_factory) -> tuple[Path, Path]:
    """(events file, SQLite file) of the churn stream, replayed once; tests that write use a copy."""
    d = tmp_path_factory.mktemp("churn")
    events = write_churn(d / "churn.jsonl", T0, days=DAYS)
    db = d / "c.db"
    assert main(["--db", f"sqlite:///{db}", "replay", str(events)]) == 0
    return events, db


@pytest.fixture
def db(churn, tmp_path) -> list[str]:
    """--db of a private copy of the churn database."""
    copy = tmp_path / "c.db"
    shutil.copy(churn[1], copy)
    return ["--db", f"sqlite:///{copy}"]


@pytest.fixture(autouse=True)
def wide(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")


def _config(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return ["--config", str(path)]


# --- 1. without --model ----------------------------------------------------------------------------------
def test_without_model_the_only_stored_model_is_used_and_several_are_listed(churn, db, tmp_path, capsys) -> None:
    preds, _ = _events(churn[0])
    code, out, _ = _run(capsys, *db, "metrics", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["model"] == "churn" and doc["counts"]["predictions"] > 0
    # the config names a model that has no data (a typo): refused, not the only stored model's numbers (tryout)
    for command in (["metrics"], ["calibration"], ["alerts"]):
        code, out, err = _run(capsys, *_config(tmp_path, "model: chrun\n"), *db, *command)
        assert code == 2 and out == "", (command, code, out)
        assert "the config's model 'chrun' has no stored predictions" in err and "'churn' (" in err
    fraud = tmp_path / "fraud.jsonl"
    fraud.write_bytes(b"\n".join(pred(f"f{i}", 0.3, T0 + 60 * i) for i in range(25)) + b"\n")
    assert main([*db, "replay", str(fraud)]) == 0
    capsys.readouterr()
    code, out, err = _run(capsys, *db, "metrics")
    assert code == 2 and out == "", (code, out)
    assert "pass --model" in err and "no predictions stored yet" not in err
    assert f"'churn' ({len(preds):,} predictions" in err and "'fraud' (25 predictions" in err
    code, out, _ = _run(capsys, *_config(tmp_path, "model: churn\n"), *db, "metrics", "--json")
    assert code == 0 and json.loads(out)["model"] == "churn"
    code, out, _ = _run(capsys, *db, "metrics", "--model", "fraud", "--json")
    assert code == 0 and json.loads(out)["counts"]["predictions"] == 25


# --- 2. alerts --model ---------------------------------------------------------------------------------------
def test_alerts_take_a_model(db, tmp_path, capsys) -> None:
    cfg = _config(tmp_path, "triggers:\n  - {name: busy, metric: alert_rate, op: '>', value: 0.01, min_n: 1}\n")
    at = "2026-10-30T00:00:00Z"
    code, out, _ = _run(capsys, *cfg, *db, "alerts", "evaluate", "--model", "churn", "--at", at, "--no-notify",
                        "--json")
    assert code == 0, out
    run = json.loads(out)
    assert run["model"] == "churn"
    code, out, _ = _run(capsys, *cfg, *db, "alerts", "--model", "churn", "--json")
    shown = json.loads(out)
    assert code == 0 and shown["model"] == "churn"
    judged = run["triggers"][0]["state"]
    assert judged["state"] == "firing" and judged["n"] > 0
    assert (shown["triggers"][0]["state"]["state"], shown["triggers"][0]["state"]["n"]) == ("firing", judged["n"])
    code, out, _ = _run(capsys, *cfg, *db, "alerts", "--json")  # the only stored model
    assert code == 0 and json.loads(out)["model"] == "churn"
    assert json.loads(out)["triggers"][0]["state"]["state"] == "firing"
    code, _, err = _run(capsys, *cfg, *db, "alerts", "--model", "fraud")
    assert code == 2 and "'churn'" in err


# --- 3. an unknown --model ----------------------------------------------------------------------------------
@pytest.mark.parametrize("command", [["metrics"], ["calibration"], ["slices"], ["drift"], ["ab"], ["report"],
                                     ["alerts"], ["alerts", "evaluate"], ["reference", "list"],
                                     ["reference", "show"], ["reference", "activate", "1"],
                                     ["reference", "set", "--from", "2026-09-01", "--to", "2026-09-10"]])
def test_an_unknown_model_is_refused_listing_the_stored_ones(churn, db, tmp_path, capsys, command) -> None:
    preds, _ = _events(churn[0])
    code, out, err = _run(capsys, *db, *command, "--model", "nosuch", *(["--out", str(tmp_path / "r")]
                                                                         if command == ["report"] else []))
    assert code == 2, (code, out, err)
    assert "'nosuch'" in err and f"'churn' ({len(preds):,} predictions" in err and "Traceback" not in err
    assert "1970" not in out + err and not (tmp_path / "r").exists()


# --- 4. month-long label delays -------------------------------------------------------------------------
def test_a_window_without_matured_labels_says_why_and_matured_picks_one(churn, db, capsys) -> None:
    preds, outs = _events(churn[0])
    delays = np.array([_ts(o["ts"]) - _ts(preds[i]["ts"]) for i, o in outs.items()])
    code, out, _ = _run(capsys, *db, "metrics", "--json")
    hint = json.loads(out)["label_maturity"]
    assert code == 0 and hint is not None and hint["labelled"] < 30
    assert hint["delay_labels"] == len(delays)
    # the stored histogram's quantiles, within its bin width (log-spaced bins ~9 % wide)
    assert hint["median_delay_s"] == pytest.approx(np.quantile(delays, 0.5), rel=0.09)
    assert hint["p95_delay_s"] == pytest.approx(np.quantile(delays, 0.95), rel=0.09)
    newest = max(max(_ts(e["ts"]) for e in preds.values()), max(_ts(e["ts"]) for e in outs.values()))
    # maturity waits for the upper edge of the bin holding the p95 (never early: not before numpy's exact p95)
    from driftline.core.grids import DELAY_EDGES, delay_bin

    wait = float(DELAY_EDGES[int(delay_bin(np.array([hint["p95_delay_s"]]))[0]) + 1])
    matured = math.floor((newest - wait) / HOUR) * HOUR
    assert _ts(hint["matured_at"]) == matured
    assert matured <= math.floor((newest - np.quantile(delays, 0.95, method="inverted_cdf")) / HOUR) * HOUR
    code, out, _ = _run(capsys, *db, "metrics")
    assert "labels for this window have not arrived yet" in out and "median label delay" in out
    assert "95th percentile" in out and f"--at {hint['matured_at']}" in out
    code, out, _ = _run(capsys, *db, "metrics", "--matured", "--json")
    doc = json.loads(out)
    assert code == 0 and _ts(doc["window"]["end"]) == matured and doc["label_maturity"] is None
    start = _ts(doc["window"]["start"])
    inside = [i for i, p in preds.items() if start <= _ts(p["ts"]) < matured]
    labelled = [i for i in inside if i in outs]
    tp = sum(1 for i in labelled if outs[i]["label"] == 1 and preds[i]["score"] >= 0.5)
    pos = sum(1 for i in labelled if outs[i]["label"] == 1)
    c = doc["counts"]
    assert (c["predictions"], c["labelled"], c["tp"], c["positives"]) == (len(inside), len(labelled), tp, pos)
    assert len(labelled) / len(inside) > 0.9
    code, _, err = _run(capsys, *db, "metrics", "--matured", "--at", "2026-10-01")
    assert code == 2 and "not both" in err


# --- 5. A/B label balance at 0 % coverage --------------------------------------------------------------------
def test_ab_label_balance_cannot_be_judged_without_labels(db, capsys) -> None:
    code, out, _ = _run(capsys, *db, "ab", "--json")
    doc = json.loads(out)
    assert code == 0 and len(doc["comparisons"]) == 2
    for comp in doc["comparisons"]:
        lb = comp["label_balance"]
        assert all(r["k"] == 0 for r in lb["coverage"].values())
        assert lb["status"] == "cannot_judge" and "30 labelled predictions" in lb["cannot_judge"]
    code, out, _ = _run(capsys, *db, "ab")
    balance = [ln for ln in out.splitlines() if "label balance" in ln]
    assert len(balance) == 2 and all("cannot judge" in ln and ": ok" not in ln for ln in balance)
    code, out, _ = _run(capsys, *db, "ab", "--matured", "--json")
    for comp in json.loads(out)["comparisons"]:
        lb = comp["label_balance"]
        assert lb["status"] in ("ok", "warning") and lb["cannot_judge"] is None
        assert min(r["k"] for r in lb["coverage"].values()) >= 30


# --- 6. slices configured after ingestion ----------------------------------------------------------------
def test_slices_configured_after_ingestion_say_why_they_are_empty(churn, db, tmp_path, capsys) -> None:
    cfg = _config(tmp_path, "slices: [plan]\n")
    code, out, _ = _run(capsys, *cfg, *db, "slices", "--json")
    feat = json.loads(out)["features"][0]
    n = json.loads(out)["window"]["n"]
    assert code == 0 and feat["values"] == [] and feat["recorded"] == 0 and feat["unrecorded"] == n > 0
    assert "recorded at ingestion" in feat["note"] and "fresh database" in feat["note"]
    code, out, _ = _run(capsys, *cfg, *db, "slices")
    assert "recorded at ingestion" in out
    fresh = ["--db", f"sqlite:///{tmp_path / 'fresh.db'}"]  # the documented rebuild: replay into a fresh database
    assert main([*cfg, *fresh, "replay", str(churn[0])]) == 0
    capsys.readouterr()
    code, out, _ = _run(capsys, *cfg, *fresh, "slices", "--json")
    doc = json.loads(out)
    feat = doc["features"][0]
    assert feat["note"] is None and feat["unrecorded"] == 0
    preds, _ = _events(churn[0])
    start, end = _ts(doc["window"]["start"]), _ts(doc["window"]["end"])
    want: dict[str, int] = {}
    for p in preds.values():
        if start <= _ts(p["ts"]) < end:
            want[p["features"]["plan"]] = want.get(p["features"]["plan"], 0) + 1
    assert {v["value"]: v["counts"]["predictions"] for v in feat["values"]} == want


# --- 7. one timestamp rule -----------------------------------------------------------------------------------
def test_a_bare_date_is_midnight_utc_for_events_and_options_alike(tmp_path, capsys) -> None:
    db = ["--db", f"sqlite:///{tmp_path / 't.db'}"]
    lines = [b'{"type":"prediction","prediction_id":"d1","model":"churn","ts":"2026-11-20","score":0.7}',
             b'{"type":"outcome","prediction_id":"d1","ts":"2026-11-21","label":1}',
             b'{"type":"prediction","prediction_id":"d2","model":"churn","ts":"2026-11-20T10","score":0.7}']
    f = tmp_path / "dates.jsonl"
    f.write_bytes(b"\n".join(lines) + b"\n")
    code, out, _ = _run(capsys, *db, "replay", str(f), "--json")
    summary = json.loads(out)
    assert (summary["accepted"], summary["dead_lettered"]) == (2, 1)
    code, out, _ = _run(capsys, *db, "dead-letters", "--json")
    assert json.loads(out)["totals"] == {"ts_invalid": 1}
    code, out, _ = _run(capsys, *db, "metrics", "--window", "1h", "--at", "2026-11-20T01:00:00Z", "--json")
    doc = json.loads(out)
    assert doc["window"]["start"] == "2026-11-20T00:00:00Z" and doc["counts"]["tp"] == 1
    code, out, _ = _run(capsys, *db, "metrics", "--window", "1h", "--at", "2026-11-20", "--json")
    assert code == 0 and json.loads(out)["window"]["end"] == "2026-11-20T00:00:00Z"
    code, _, err = _run(capsys, *db, "metrics", "--at", "2026-11-20T10")  # refused here as in events
    assert code == 2 and "RFC 3339" in err and "2026-11-30 (00:00 UTC)" in err


# --- 8. setting the same reference twice -------------------------------------------------------------------
def test_setting_the_same_reference_again_is_unchanged(db, capsys) -> None:
    rng = ["reference", "set", "--from", "2026-09-01", "--to", "2026-09-15"]
    code, out, _ = _run(capsys, *db, *rng, "--json")
    first = json.loads(out)
    assert code == 0 and first["unchanged"] is False
    code, out, _ = _run(capsys, *db, *rng, "--json")
    again = json.loads(out)
    assert code == 0 and again["unchanged"] is True and again["id"] == first["id"]
    code, out, _ = _run(capsys, *db, *rng)
    assert code == 0 and "unchanged" in out
    code, out, _ = _run(capsys, *db, *rng, "--variant", "holdout", "--json")  # other options: a new version
    assert json.loads(out)["id"] != first["id"]
    code, out, _ = _run(capsys, *db, *rng, "--json")  # the first again: made active, nothing added
    assert json.loads(out)["id"] == first["id"] and json.loads(out)["active"] is True
    code, out, _ = _run(capsys, *db, *rng, "--force", "--json")
    assert json.loads(out)["unchanged"] is False and json.loads(out)["id"] not in (first["id"],)
    code, out, _ = _run(capsys, *db, "reference", "list", "--json")
    assert len(json.loads(out)) == 3


# --- 9. the A/B header for any variant names ---------------------------------------------------------------
def test_the_ab_header_reads_for_any_variant_names(db, tmp_path, capsys) -> None:
    code, out, _ = _run(capsys, *db, "ab")
    head = out.splitlines()[0]
    assert "split test (one arm per prediction), control arm 'control'" in head
    assert "control control" not in out
    code, out, _ = _run(capsys, *db, "report", "--week", "2026-W43", "--out", str(tmp_path / "r"), "--json")
    assert code == 0
    html = Path(json.loads(out)["paths"]["html"]).read_text()
    assert "Split test (one arm per prediction), control arm" in html and "control <b>control</b>" not in html


# --- leftovers: misspelled trigger names, a negative window ---------------------------------------------
def test_a_trigger_on_an_unseen_variant_or_feature_is_named(db, tmp_path, capsys) -> None:
    # recall over 60d: the churn fixture's labels come ~28 d after prediction, and a recall trigger over the newest
    # 7d is named for that too (tests/test_trigger_label_delay.py); this test is about unseen names alone
    cfg = _config(tmp_path, "features: {plan: categorical}\ntriggers:\n"
                            "  - {name: typo_variant, metric: recall, op: '<', value: 0.5, variant: treatmnet,"
                            " window: 60d}\n"
                            "  - {name: typo_feature, metric: psi, op: '>', value: 0.2, feature: plna}\n"
                            "  - {name: fine, metric: psi, op: '>', value: 0.2, feature: plan, variant: holdout}\n")
    code, _, err = _run(capsys, *cfg, *db, "alerts", "validate")
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 2 and "'typo_variant'" in lines[0] and "'treatmnet'" in lines[0]
    assert "'typo_feature'" in lines[1] and "'plna'" in lines[1] and "'fine'" not in err
    code, _, err = _run(capsys, *cfg, *db, "alerts", "evaluate", "--dry-run", "--at", "2026-10-20", "--json")
    assert code == 0 and "'treatmnet'" in err and "'plna'" in err
    ok = _config(tmp_path, "triggers:\n  - {name: fine, metric: recall, op: '<', value: 0.5, variant: holdout,"
                           " window: 60d}\n")
    code, out, err = _run(capsys, *ok, *db, "alerts", "validate")
    assert code == 0 and err == "" and "every variant and feature named is known" in out


def test_a_negative_window_is_a_clear_error_not_usage(db, capsys) -> None:
    code, out, err = _run(capsys, *db, "metrics", "--window", "-7d")
    assert code == 2 and "usage:" not in err and "--window: invalid duration '-7d'" in err


def test_counts_read_without_a_full_decode_equal_the_full_decode(churn) -> None:
    from driftline.core.stats import merge
    from driftline.storage.store import Store
    from driftline.storage.summaries import delay_histogram, model_summaries

    store = Store(f"sqlite:///{churn[1]}")
    try:
        rows = store.buckets("churn", 0, 1e12, features=False)
        full = merge(r.stats for r in rows)
        hist, first = delay_histogram(store, "churn")
        assert hist.tolist() == full.delay.tolist() and first == min(r.bucket_start for r in rows)
        assert model_summaries(store) == [("churn", full.predictions, max(r.bucket_start for r in rows))]
    finally:
        store.close()


# --- terminal polish: prose wraps between words at the console's width ------------------------------------------
def _words(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("command", ["metrics", "ab"])
def test_the_maturity_note_wraps_between_words_with_its_lines_indented(db, capsys, monkeypatch, command) -> None:
    code, out, _ = _run(capsys, *db, command, "--json")
    note = json.loads(out)["label_maturity"]["note"]
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = _run(capsys, *db, command)
    lines = out.splitlines()
    assert code == 0 and all(len(line) <= 80 for line in lines), out
    first = next(n for n, line in enumerate(lines) if line.startswith("note: labels for this window"))
    rest = list(itertools.takewhile(lambda line: line.startswith("      "), lines[first + 1:]))
    assert rest, out  # wrapped, each continuation line under the note's text
    assert _words(" ".join([lines[first], *rest])) == _words("note: " + note)  # no word cut in two


def test_health_and_power_continuation_lines_are_indented(db, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = _run(capsys, *db, "ab")
    body = out[out.index("health checks"):out.index("Verdict")].splitlines()[1:]
    assert code == 0 and len(body) > 6
    assert all(line.startswith("  ") for line in body if line.strip() and not line.startswith("power")), out


def test_a_window_without_labels_says_so_in_every_readout(db, tmp_path, capsys) -> None:
    """The churn default window has no label yet: each readout says so in words (with the --matured hint where
    there is one) instead of tables of `— (n=0)`, raw reason codes or a 'not drifted' verdict."""
    cfg = _config(tmp_path, "model: churn\nslices: [plan]\ntargets: {recall: 0.8}\n")
    code, out, _ = _run(capsys, *cfg, *db, "slices")
    text = _words(out)
    assert code == 0 and "no labelled predictions in this window yet" in text and "--matured" in text, out
    assert "no slice's interval lies beyond the targets" not in text and "shortfall =" not in text
    code, out, _ = _run(capsys, *cfg, *db, "calibration")
    text = _words(out)
    assert code == 0 and "no labelled predictions in this window yet" in text and "--matured" in text, out
    assert "reliability (equal-width bins)" not in out and "Brier —" not in out
    assert "no_reference" not in out and "NOT TRUSTED: no reference set" in text
    assert "base rate: needs labelled predictions in the window" in text and "imply precision —" not in text
    assert main([*cfg, *db, "reference", "set", "--from", "2026-09-01", "--to", "2026-09-15"]) == 0
    capsys.readouterr()
    code, out, _ = _run(capsys, *cfg, *db, "drift")
    prevalence = _words(out[out.index("prevalence:"):])
    assert code == 0 and "cannot judge (no labels" in prevalence and "not drifted" not in prevalence.split("·")[2]
    code, out, _ = _run(capsys, *cfg, *db, "ab")
    text = _words(out)
    assert code == 0 and text.count("power cannot be computed until labels arrive") == 2, out
    assert "minimum detectable gain —" not in text and "(~— days)" not in text
    assert "median delay —" not in text and "(p = —)" not in text  # second tryout
