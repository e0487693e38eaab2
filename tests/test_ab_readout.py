"""The A/B readout end to end: real pipeline into SQLite, then `ab_document` / `driftline ab --json`, checked
against `driftline metrics --json`, the pure statistics, scipy and statsmodels."""

from __future__ import annotations

import json
import math
import re
from datetime import datetime
from typing import Any

import msgspec
import numpy as np
import pytest
from scipy.stats import chisquare
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import confint_proportions_2indep

from driftline.readouts.ab import ABQuery, ab_document, costs_from_config, plan_arms
from driftline.readouts.ab_sequential import sequential_more_needed
from driftline.analysis.abstats import ArmCounts, compare_proportions, holm
from driftline.analysis.label_balance import label_balance
from driftline.analysis.costs import cost_difference, cost_per_1000
from driftline.analysis.label_pipeline import label_pipeline
from driftline.analysis.power import recall_power
from driftline.analysis.sequential import SequentialPlan, cs_difference, cs_from_standard_error
from driftline import numbers
from driftline.cli import main
from driftline.commands.demo import EXAMPLE_COSTS
from driftline.config import AB, ConfigError, from_dict, load
from driftline.core.grids import DELAY_EDGES
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.readouts.metrics import resolve_window
from driftline.ingest.simulate import SimSpec, stream
from driftline.storage.store import Store
from driftline.readouts.windows import Window, merged, window_rows

from helpers import outcome, pred

SHADOW_AB = {"design": "shadow", "control": "A", "arms": {"A": 0.5, "B": 0.5}}
"""A shadow design names its production arm (refused at load without it)."""
T0 = 1_699_920_000.0  # a midnight UTC
WEEK = 7 * 86400.0
HEADLINE = ("recall", "fpr", "precision", "alert_rate")
_enc = msgspec.json.Encoder()


def parse_ts(text: str) -> float:
    """Epoch seconds of the simulator's RFC 3339 times."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _ingest(url: str, config: Any, raws: list[bytes]) -> Store:
    store = Store(url)
    store.migrate()
    pipe = Pipeline(config, store, clock=lambda: T0 + 400 * 86400)
    for i in range(0, len(raws), 5000):
        pipe.process_batch([RawRecord("test", 0, j, raws[j]) for j in range(i, min(i + 5000, len(raws)))])
    return store


def _sim(spec: SimSpec) -> list[bytes]:
    return [_enc.encode(e) for e in stream(spec)]


@pytest.fixture(scope="module")
def split_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Store]:
    """Ten simulated days (A = v1, B = v2 slightly better), 50/50 split, through the real pipeline."""
    url = f"sqlite:///{tmp_path_factory.mktemp('ab') / 'split.db'}"
    store = _ingest(url, from_dict({}), _sim(SimSpec(start=T0, days=10, per_day=3000, drift_day=None, seed=3)))
    yield url, store
    store.close()


PRICED: dict[str, Any] = {"costs": EXAMPLE_COSTS}
"""The example config's costs (the readout shows costs only with a `costs:` section)."""


def _doc(store: Store, config: Any = None, model: str = "fraud", **kw: Any) -> dict[str, Any]:
    return ab_document(store, config or from_dict(PRICED), ABQuery(model, WEEK, **kw))


# --- the contract ------------------------------------------------------------------------------------
def test_json_contract_keys(split_db) -> None:
    _, store = split_db
    doc = _doc(store)
    json.dumps(doc, allow_nan=False)
    assert {"design", "control", "window", "arms", "comparisons", "srm", "label_balance", "power",
            "verdict"} <= set(doc)
    assert doc["design"] == "split" and doc["control"] == "A" and set(doc["arms"]) == {"A", "B"}
    for arm in doc["arms"].values():
        assert {"predictions", "labelled", "positives", "cost_per_1000", "label_delay_seconds"} <= set(arm)
        for m in (*HEADLINE, "label_coverage"):
            assert {"value", "low", "high", "n"} <= set(arm[m])
        assert {"value", "low", "high"} <= set(arm["cost_per_1000"])
    (comp,) = doc["comparisons"]
    assert comp["treatment"] == "B" and set(comp["metrics"]) == set(HEADLINE) and "paired" not in comp
    for m in HEADLINE:
        assert {"diff", "low", "high", "p_value", "p_holm", "rel_lift", "seq_low", "seq_high",
                "counts"} <= set(comp["metrics"][m])
        assert set(comp["metrics"][m]["rel_lift"]) == {"value", "low", "high"}
    assert {"diff", "low", "high"} <= set(comp["cost_per_1000"])
    assert {"chi2", "p_value", "mismatch"} <= set(doc["srm"])
    assert {"mde", "needed_per_arm", "more_per_arm", "days"} <= set(doc["power"])
    assert isinstance(doc["verdict"], str) and doc["verdict"]


def test_arm_counts_equal_metrics_cli(split_db, capsys) -> None:
    """Each arm equals `driftline metrics --json --variant X` over the same (default) window."""
    url, store = split_db
    doc = _doc(store)
    for v in ("A", "B"):
        assert main(["--db", url, "metrics", "--json", "--window", "7d", "--variant", v]) == 0
        met = json.loads(capsys.readouterr().out)
        arm = doc["arms"][v]
        assert met["window"]["start"] == doc["window"]["start"] and met["window"]["end"] == doc["window"]["end"]
        c = met["counts"]
        assert (arm["predictions"], arm["labelled"], arm["positives"]) == (c["predictions"], c["labelled"],
                                                                            c["positives"])
        assert arm["counts"]["tp"] == c["tp"] and arm["counts"]["fp"] == c["fp"] and arm["counts"]["fn"] == c["fn"]
        for m in HEADLINE:
            assert arm[m] == met["metrics"][m]
        assert arm["label_coverage"] == met["label_coverage"]
        assert arm["label_delay_seconds"] == met["label_delay_seconds"]
        assert arm["predictions"] > 10_000


def test_without_costs_no_money_is_shown(split_db, capsys) -> None:
    """Issue 17 §2: without a `costs:` section the readout has no cost figures (None, not a cost of 0) and the
    CLI says that costs are not configured."""
    url, store = split_db
    doc = _doc(store, from_dict({}))
    assert doc["costs_configured"] is False and doc["currency"] is None
    assert all(a["cost_per_1000"] is None and a["monthly"] is None for a in doc["arms"].values())
    assert doc["comparisons"][0]["cost_per_1000"] is None
    assert doc["arms"]["A"]["recall"] == _doc(store)["arms"]["A"]["recall"]  # the rates do not depend on costs
    assert main(["--db", url, "ab", "--window", "7d", "--at", str(T0 + WEEK)]) == 0
    out = capsys.readouterr().out
    assert "costs not configured" in out and "cost per 1,000" not in out and "EUR" not in out


def test_comparisons_equal_the_pure_functions(split_db) -> None:
    _, store = split_db
    config = from_dict(PRICED)
    doc = _doc(store, config)
    (comp,) = doc["comparisons"]
    arm = {v: ArmCounts(**doc["arms"][v]["counts"]) for v in ("A", "B")}
    t, c = arm["B"], arm["A"]
    direct = {m: compare_proportions(*t.metric_counts(m), *c.metric_counts(m), metric=m) for m in HEADLINE}
    adjusted = dict(zip(HEADLINE, holm([direct[m].p_value for m in HEADLINE])))
    pos = t.positives + c.positives
    for m in HEADLINE:
        got, want = comp["metrics"][m], direct[m]
        assert (got["diff"], got["low"], got["high"], got["p_value"]) == (want.diff, want.low, want.high,
                                                                          want.p_value)
        assert got["p_holm"] == adjusted[m] and got["rel_lift"] == want.rel_lift.to_json()
        planned = 500.0 if m == "recall" else 500.0 * (want.n_t + want.n_c) / pos
        seq = cs_difference(want.k_t, want.n_t, want.k_c, want.n_c, SequentialPlan(planned))
        assert (got["seq_low"], got["seq_high"]) == pytest.approx((seq.low, seq.high), rel=1e-12)
        assert got["counts"] == {"treatment": {"k": want.k_t, "n": want.n_t},
                                 "control": {"k": want.k_c, "n": want.n_c}}
    # independent reference: statsmodels' Newcombe hybrid score interval for the recall difference
    ref = confint_proportions_2indep(t.tp, t.positives, c.tp, c.positives, method="newcomb", compare="diff")
    assert (comp["metrics"]["recall"]["low"], comp["metrics"]["recall"]["high"]) == pytest.approx(ref, abs=1e-9)
    # FPR plan in units of negatives equals SequentialPlan.for_negatives at the pooled prevalence
    prev = pos / (t.labelled + c.labelled)
    assert comp["metrics"]["fpr"]["seq_planned_per_arm"] == pytest.approx(SequentialPlan(500).for_negatives(prev)
                                                                          .planned_per_arm)
    costs = costs_from_config(config.costs)
    cost = comp["cost_per_1000"]
    cd = cost_difference(t, c, costs)
    assert {k: v for k, v in cost.items() if not k.startswith("seq_")} == {**cd.to_json(), "method": "mid_p_mover"}
    # its always-valid interval: the delta-method standard error on the CS boundary, one observation per prediction
    se = cd.se  # no longer (high − low) / 2z: the fixed-horizon interval is the MOVER one, not symmetric
    n_pred = t.predictions + c.predictions
    cost_seq = cs_from_standard_error(cd.diff, se, n_pred, SequentialPlan(500.0 * n_pred / pos))
    assert (cost["seq_low"], cost["seq_high"]) == pytest.approx((cost_seq.low, cost_seq.high), rel=1e-9)
    assert cost["seq_low"] < cost["low"] and cost["seq_high"] > cost["high"]
    assert doc["arms"]["A"]["cost_per_1000"] == cost_per_1000(c, costs).to_json()
    days = doc["window"]["days_observed"]
    assert days == 7.0
    # the days count the labels still to come for the stored predictions (analysis.label_pipeline): each arm's
    # hourly buckets with their age when their labels are known (the newest stored event: this stream holds every
    # outcome, weeks past the window's end, so none is still to come) and its predictions a day; the label delays
    # those of its positives (from the simulated events: frauds are reported sooner than genuine transactions are
    # confirmed) made over the label horizon (90 d) ending at the newest event, each delay weighted by the
    # predictions of that span old enough to show it: here all 10 days of the stream, the 7-day window's alone
    # could not show a delay longer than its oldest prediction (readouts.ab_delay). Ages counted to the window's
    # end read 18 days here: the labels after it taken as still to come.
    win = resolve_window(store, config, "fraud", WEEK, None)
    as_of = store.newest_event()
    assert as_of is not None and as_of > win.end + 7 * 86400.0
    span = Window(math.ceil((as_of - 90 * 86400.0) / 3600) * 3600.0, math.floor(as_of / 3600) * 3600.0 + 3600)
    events = list(stream(SimSpec(start=T0, days=10, per_day=3000, drift_day=None, seed=3)))
    when = {e["prediction_id"]: (e["variant"], parse_ts(e["ts"])) for e in events if e["type"] == "prediction"}
    assert span.start < T0 and all(span.start <= w < span.end for _, w in when.values())
    pipes = []
    for v, arm_counts in (("A", c), ("B", t)):
        rows = window_rows(store, "fraud", win, v)
        ages = np.array([as_of - (r.bucket_start + 1800.0) for r in rows])
        sample = window_rows(store, "fraud", span, v)
        assert len(sample) > len(rows)
        delays = np.array([parse_ts(e["ts"]) - when[e["prediction_id"]][1] for e in events
                           if e["type"] == "outcome" and e["label"] == 1 and when[e["prediction_id"]][0] == v])
        assert len(delays) == ArmCounts.from_conf(merged(sample).conf).positives > arm_counts.positives
        hist = np.bincount(np.clip(np.searchsorted(DELAY_EDGES, delays, side="right") - 1, 0, len(DELAY_EDGES) - 1),
                           minlength=len(DELAY_EDGES))
        assert not np.array_equal(hist, merged(sample).delay)  # the buckets' histogram holds the negatives' too
        pipes.append(label_pipeline(arm_counts.positives, hist, DELAY_EDGES, ages,
                                    np.array([r.stats.predictions for r in rows]), arm_counts.predictions / days,
                                    "positives", np.array([as_of - (r.bucket_start + 1800.0) for r in sample]),
                                    np.array([r.stats.predictions for r in sample]),
                                    as_of - min(r.bucket_start for r in sample)))
    pw = recall_power(c.tp, c.positives, t.positives, 0.05, min(t.positives, c.positives) / days,
                      arm_rates=(c.positives / days, t.positives / days), curves=(pipes[0].expected, pipes[1].expected))
    assert {k: doc["power"][k] for k in pw.to_json()} == pw.to_json()
    assert pw.more_per_arm is not None and pw.more_per_arm > 0 and pw.days is not None
    at_rate = recall_power(c.tp, c.positives, t.positives, 0.05, min(t.positives, c.positives) / days,
                           arm_rates=(c.positives / days, t.positives / days))
    # every label of this stream has come (none on its way): more labelled positives need new traffic, labelled
    # only after the delay, so not sooner than at the labelled-so-far rate
    assert all(p.pending() < 0.01 * n for p, n in zip(pipes, (c.positives, t.positives)))
    assert at_rate.days is not None and pw.days >= at_rate.days
    delay = {v: merged(window_rows(store, "fraud", win, v)).delay for v in ("A", "B")}
    lb = label_balance(t, c, ("B", "A"), delay["B"], delay["A"], DELAY_EDGES)
    assert doc["label_balance"] == {"treatment": "B", **lb.to_json()} and not lb.warnings
    assert lb.delay_p_value is not None and lb.median_delay_s["A"] > 86400
    n = {v: doc["arms"][v]["predictions"] for v in ("A", "B")}
    ref_srm = chisquare([n["A"], n["B"]])
    assert doc["srm"]["chi2"] == pytest.approx(ref_srm.statistic) and doc["srm"]["p_value"] == pytest.approx(
        ref_srm.pvalue)
    assert doc["srm"]["mismatch"] is False


def test_srm_90_10_split_configured_as_50_50(tmp_path) -> None:
    spec = SimSpec(start=T0, days=3, per_day=2000, drift_day=None, seed=5,
                   variants=(("A", "v1", 0.9), ("B", "v2", 0.1)))
    store = _ingest(f"sqlite:///{tmp_path / 'srm.db'}", from_dict({}), _sim(spec))
    wrong = _doc(store, from_dict({"ab": {"arms": {"A": 0.5, "B": 0.5}}}))
    n = [wrong["arms"]["A"]["predictions"], wrong["arms"]["B"]["predictions"]]
    ref = chisquare(n, f_exp=[sum(n) / 2] * 2)
    assert wrong["srm"]["mismatch"] is True and wrong["srm"]["p_value"] == pytest.approx(ref.pvalue)
    assert wrong["srm"]["chi2"] == pytest.approx(ref.statistic)
    assert wrong["verdict"].startswith("Sample-ratio mismatch") and "unreliable" in wrong["verdict"]
    right = _doc(store, from_dict({"ab": {"arms": {"A": 0.9, "B": 0.1}}}))
    ref = chisquare(n, f_exp=[0.9 * sum(n), 0.1 * sum(n)])
    assert right["srm"]["p_value"] == pytest.approx(ref.pvalue) and right["srm"]["mismatch"] is False
    assert "mismatch" not in right["verdict"]
    store.close()


# --- shadow mode -------------------------------------------------------------------------------------
def _shadow_events(seed: int, n: int = 5000, only_a: int = 60, unflagged_labelled: float = 1.0
                   ) -> tuple[list[bytes], dict[str, np.ndarray]]:
    """Each id scored by A (v1) and B (v2, better separation) with shared noise; ~8 % fraud; 5 % unlabelled
    (and only `unflagged_labelled` of the ids A does not flag). `only_a` extra unlabelled ids scored by A alone."""
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.08
    shared = rng.normal(0, 1.0, n)
    sa = 1 / (1 + np.exp(-(np.where(y, 0.8, -2.2) + shared + rng.normal(0, 0.6, n))))
    sb = 1 / (1 + np.exp(-(np.where(y, 1.2, -2.3) + shared + rng.normal(0, 0.6, n))))
    labelled = (rng.random(n) >= 0.05) & ((sa >= 0.5) | (rng.random(n) < unflagged_labelled))
    ts = T0 + np.sort(rng.random(n)) * 5 * 86400
    raws: list[bytes] = []
    for i in range(n):
        raws.append(pred(f"s{i}", float(sa[i]), float(ts[i]), variant="A", model_version="v1"))
        raws.append(pred(f"s{i}", float(sb[i]), float(ts[i]) + 0.5, variant="B", model_version="v2"))
        if labelled[i]:
            raws.append(outcome(f"s{i}", int(y[i]), float(ts[i]) + 86400))
    for j in range(only_a):
        raws.append(pred(f"a{j}", 0.3, T0 + 3600 + j, variant="A", model_version="v1"))
    return raws, {"y": y, "fa": sa >= 0.5, "fb": sb >= 0.5, "labelled": labelled}


def test_shadow_paired_counts_and_exact_mcnemar(tmp_path, capsys) -> None:
    config = from_dict({**PRICED, "ab": SHADOW_AB})
    raws, truth = _shadow_events(11)
    url = f"sqlite:///{tmp_path / 'shadow.db'}"
    store = _ingest(url, config, raws)
    doc = _doc(store, config, seed=4)
    json.dumps(doc, allow_nan=False)
    assert doc["design"] == "shadow"
    pr = doc["comparisons"][0]["paired"]
    y, fa, fb, lab = truth["y"], truth["fa"], truth["fb"], truth["labelled"]
    pos, neg = lab & y, lab & ~y
    direct = {"recall": (pos & fa & ~fb, pos & ~fa & fb), "fpr": (neg & fa & ~fb, neg & ~fa & fb)}
    for key, (a_only, b_only) in direct.items():
        assert (pr[key]["control_only"], pr[key]["treatment_only"]) == (int(a_only.sum()), int(b_only.sum()))
        cells = lambda m: int(m.sum())  # noqa: E731
        sel = pos if key == "recall" else neg
        table = [[cells(sel & fa & fb), cells(sel & fa & ~fb)], [cells(sel & ~fa & fb), cells(sel & ~fa & ~fb)]]
        assert pr[key]["p_value"] == pytest.approx(mcnemar(table, exact=True).pvalue, rel=1e-9)
    assert pr["recall"]["treatment_only"] > pr["recall"]["control_only"] > 0
    assert pr["pairs"] == len(y) and pr["unpaired"] == {"control": 60, "treatment": 0}
    assert pr["table"]["counts"][2][0][0] + pr["table"]["counts"][2][0][1] == int((~lab & ~fa).sum())
    # the A-only ids are unlabelled, so the paired recall difference is the arms' recall difference
    boot = pr["bootstrap"]
    assert boot["recall"]["diff"] == pytest.approx(doc["comparisons"][0]["metrics"]["recall"]["diff"])
    assert boot["recall"]["low"] < boot["recall"]["diff"] < boot["recall"]["high"]
    assert boot["seed"] == 4 and _doc(store, config, seed=4)["comparisons"] == doc["comparisons"]
    assert doc["comparisons"][0]["cost_per_1000"]["method"] == "paired_bootstrap"
    # paired interval narrower than the independent-arm Newcombe interval (seed 001's shape)
    rec = doc["comparisons"][0]["metrics"]["recall"]
    assert boot["recall"]["high"] - boot["recall"]["low"] < rec["high"] - rec["low"]
    assert doc["srm"]["mismatch"] is False  # 60 extra A rows out of 5,000 is not material
    assert pr["labels_follow_control"]["warning"] is False and "Caution: labels follow" not in doc["verdict"]
    assert "Shadow mode, 5,000 ids scored by both" in doc["verdict"]  # counts with separators
    assert f"B catches {pr['recall']['treatment_only']} positives A misses" in doc["verdict"]
    # the CLI on a shadow config file, human-readable
    cfg = tmp_path / "shadow.yaml"
    cfg.write_text("ab:\n  design: shadow\n  control: A\n  arms: {A: 0.5, B: 0.5}\n")
    assert main(["--config", str(cfg), "--db", url, "ab", "--seed", "4"]) == 0
    out = capsys.readouterr().out
    assert "shadow pairs: 5,000 ids" in out and "Verdict:" in out
    store.close()


# --- verdicts on controlled counts ------------------------------------------------------------------------
def _arm(variant: str, model: str, tp: int, fn: int, fp: int, tn: int, unl: int = 0) -> list[bytes]:
    """Predictions of one arm with exactly these confusion counts (+ `unl` unflagged, unlabelled)."""
    cells = [(0.9, 1)] * tp + [(0.1, 1)] * fn + [(0.9, 0)] * fp + [(0.1, 0)] * tn + [(0.2, None)] * unl
    ts = T0 + np.arange(len(cells)) * (5 * 86400 / len(cells))
    raws = []
    for i, ((score, y), t) in enumerate(zip(cells, ts)):
        pid = f"{model}-{variant}-{i}"
        raws.append(pred(pid, score, float(t), variant=variant, model=model))
        if y is not None:
            raws.append(outcome(pid, y, float(t) + 7200))
    return raws


SCENARIOS = {  # model → B's caught positives (of 150), A catches 90 of 150; 60 FPs and 3,000 TNs each
    "both": 125, "fixed_only": 113, "unadjusted_only": 110, "none": 92, "few": None, "labels": None,
    "alert_only": None,
}


@pytest.fixture(scope="module")
def verdict_db(tmp_path_factory: pytest.TempPathFactory) -> Store:
    raws: list[bytes] = []
    for model, kt in SCENARIOS.items():
        if model == "few":  # too few labelled positives: 12 vs 9
            raws += _arm("A", model, 6, 6, 30, 2000, 40) + _arm("B", model, 6, 3, 30, 2000, 40)
        elif model == "alert_only":  # same recall; B flags 50 more genuine ones: FPR and alert rate differ
            raws += _arm("A", model, 90, 60, 60, 3000) + _arm("B", model, 90, 60, 110, 3000)
        elif model == "labels":  # every flag labelled, 30 % of the rest; B flags 4× more
            raws += _arm("A", model, 90, 40, 60, 920, 2240) + _arm("B", model, 120, 30, 480, 795, 1925)
        else:
            raws += _arm("A", model, 90, 60, 60, 3000) + _arm("B", model, kt, 150 - kt, 60, 3000)
    store = _ingest(f"sqlite:///{tmp_path_factory.mktemp('ab') / 'verdict.db'}", from_dict({}), raws)
    yield store
    store.close()


def test_verdict_both_intervals_exclude_zero(verdict_db) -> None:
    doc = _doc(verdict_db, model="both")
    rec = doc["comparisons"][0]["metrics"]["recall"]
    assert rec["fixed_excludes_zero"] and rec["seq_excludes_zero"] and rec["p_holm"] < 0.05
    v = doc["verdict"]
    assert v.startswith("Differences are B − A. B's recall is higher than A's: +0.233 [") and "also excludes 0" in v
    assert "keep collecting" not in v


def test_verdict_fixed_excludes_but_sequential_does_not(verdict_db) -> None:
    doc = _doc(verdict_db, model="fixed_only")
    comp = doc["comparisons"][0]
    rec = comp["metrics"]["recall"]
    assert rec["fixed_excludes_zero"] and not rec["seq_excludes_zero"] and rec["p_holm"] < 0.05
    v = doc["verdict"]
    # no claim: the interval appropriate to continuous monitoring (always-valid) still includes 0
    assert v.startswith(f"Differences are B − A. Not established under repeated looks: B − A recall = +0.153; the "
                        f"fixed-horizon 95 % interval {numbers.interval(rec['low'], rec['high'])} (Holm p = {numbers.pvalue(rec['p_holm'])}")
    assert "recall is higher" not in v
    assert f"the always-valid interval {numbers.interval(rec['seq_low'], rec['seq_high'])} still includes 0" in v
    more = rec["seq_more_needed"]
    days = rec["seq_more_days"]  # every label has come: new traffic's, labelled 2 h after it, at 60 positives a day
    at_rate = more / comp["power"]["positives_per_day"]
    assert math.ceil(at_rate) <= days <= math.ceil(at_rate + 2.5 / 24)
    assert f"still includes 0, so keep collecting before acting on repeated looks: ~{numbers.count(more)} more labelled " \
           f"positives (~{days} day{'s' if days != 1 else ''})" in v
    assert comp["power"]["positives_per_day"] == pytest.approx(300 / 5, rel=0.05)


def test_verdict_never_claims_a_difference_the_always_valid_interval_does_not_support(verdict_db) -> None:
    """Issue 15 §6: the alert-rate difference was stated as established although its always-valid interval
    contained 0. A claim now needs the always-valid interval (and the Holm-adjusted fixed test); each claim
    names the interval it rests on."""
    doc = _doc(verdict_db, model="alert_only")
    m = doc["comparisons"][0]["metrics"]
    ar, fpr = m["alert_rate"], m["fpr"]
    assert ar["fixed_excludes_zero"] and ar["p_holm"] < 0.05 and not ar["seq_excludes_zero"]
    assert fpr["fixed_excludes_zero"] and fpr["p_holm"] < 0.05 and fpr["seq_excludes_zero"]
    v = doc["verdict"]
    assert "alert rate is higher" not in v
    assert (f"B − A alert rate = +{ar['diff']:.3f}: the fixed-horizon interval {numbers.interval(ar['low'], ar['high'])} "
            f"excludes 0 but the always-valid interval {numbers.interval(ar['seq_low'], ar['seq_high'])} does not") in v
    assert (f"B's FPR is higher: +{fpr['diff']:.3f} {numbers.interval(fpr['low'], fpr['high'])} (fixed-horizon 95 % "
            f"interval, Holm p") in v
    assert f"always-valid interval {numbers.interval(fpr['seq_low'], fpr['seq_high'])} also excludes 0" in v
    # the cost difference carries an always-valid interval too, and is claimed only when it excludes 0
    cost = doc["comparisons"][0]["cost_per_1000"]
    assert cost["seq_low"] <= cost["low"] and cost["seq_high"] >= cost["high"]
    if cost["low"] > 0 and cost["seq_low"] <= 0:
        assert "Cost per 1,000 predictions is higher" not in v
    for d in (_doc(verdict_db, model=k) for k in SCENARIOS):  # no scenario claims beyond its always-valid interval
        for comp in d["comparisons"]:
            for name, e in comp["metrics"].items():
                if e["diff"] is not None and not e["seq_excludes_zero"]:
                    label = {"fpr": "FPR", "alert_rate": "alert rate"}.get(name, name)
                    assert f"{label} is higher" not in d["verdict"] and f"{label} is lower" not in d["verdict"]


def test_verdict_unadjusted_only_and_no_difference(verdict_db) -> None:
    doc = _doc(verdict_db, model="unadjusted_only")
    rec = doc["comparisons"][0]["metrics"]["recall"]
    assert rec["low"] > 0 and rec["p_holm"] >= 0.05
    assert "after Holm correction" in doc["verdict"] and "not a significant difference" in doc["verdict"]
    assert "recall is higher" not in doc["verdict"]
    none = _doc(verdict_db, model="none")
    assert none["verdict"].startswith("Differences are B − A. No significant recall difference between B and A: "
                                      "+0.013 [")
    assert "does not show they are equal" in none["verdict"] and "minimum detectable recall gain" in none["verdict"]


def test_verdict_too_few_positives_and_empty(verdict_db, tmp_path) -> None:
    doc = _doc(verdict_db, model="few")
    assert doc["verdict"].startswith("Differences are B − A. Too few labelled positives to judge recall (A: 12, B: 9;")
    assert "indicative only" in doc["verdict"]
    assert doc["arms"]["A"]["recall"]["indicative"] is True
    empty = Store(f"sqlite:///{tmp_path / 'empty.db'}")
    empty.migrate()
    e = _doc(empty)
    assert e["arms"] == {} and e["comparisons"] == [] and e["verdict"].startswith("No predictions")
    assert e["window"]["start"] is None and e["window"]["end"] is None
    assert any("no predictions stored yet" in n for n in e["notes"])
    json.dumps(e, allow_nan=False)
    empty.close()


def test_verdict_warns_when_labels_follow_flags(verdict_db) -> None:
    """B flags more and flagged predictions are labelled more often: the verdict says recall is biased."""
    doc = _doc(verdict_db, model="labels")
    warnings = doc["label_balance"]["warnings"]
    assert len(warnings) == 2 and "label coverage differs" in warnings[0]
    assert "recall comparison is biased" in warnings[1]
    assert all(f"Caution: {w}" in doc["verdict"] for w in warnings)
    cov = doc["label_balance"]["coverage"]
    assert cov["A"]["value"] == pytest.approx((150 + 960) / 3350) and cov["B"]["value"] == pytest.approx(1425 / 3350)


def test_sequential_more_needed_reaches_exclusion() -> None:
    """After `more` further positives at the same rates the always-valid interval excludes 0; a tenth
    fewer and it does not."""
    plan = SequentialPlan(500)
    more = sequential_more_needed(113, 150, 90, 150, plan)
    assert more is not None and more > 0

    def at(extra: float) -> bool:
        s = 1 + extra / 300
        return cs_difference(round(113 * s), round(150 * s), round(90 * s), round(150 * s), plan).excludes_zero

    assert at(more + 2) and not at(0.9 * more)
    assert sequential_more_needed(125, 150, 90, 150, plan) == 0
    assert sequential_more_needed(90, 150, 90, 150, plan) is None


def test_plan_arms_defaults_and_errors() -> None:
    assert plan_arms(AB(), ["B", "A"]).control == "A"
    p = plan_arms(AB(), ["Y", "X"])
    assert p.control == "X" and dict(p.shares) == {"X": 0.5, "Y": 0.5} and p.notes
    p = plan_arms(AB(control="B", arms={"A": 0.75, "B": 0.25}), ["A", "B", "C"])
    assert dict(p.shares) == {"A": 0.75, "B": 0.25} and p.treatments == ["A"] and "'C'" in p.notes[0]
    with pytest.raises(ValueError, match="control"):  # refused when the AB is made (config load), not at `ab`
        AB(control="Z", arms={"A": 0.5, "B": 0.5})


def test_an_ignored_variant_close_to_an_arm_without_predictions_is_named_as_a_likely_misspelling() -> None:
    """Tryout: `ab.arms` spelt `Candidate` while the events send `candidate` read as an empty arm and a sample-ratio
    MISMATCH; the note on the ignored variant now names the configured arm it probably meant."""
    ab = AB(control="control", arms={"control": 0.5, "Candidate": 0.5})
    p = plan_arms(ab, ["candidate", "control"])
    assert len(p.notes) == 1 and "configured arm 'Candidate' has no predictions in the window" in p.notes[0]
    p = plan_arms(ab, ["Candidate", "control", "zzz"])  # a far name, and every arm present: no hint
    assert len(p.notes) == 1 and "has no predictions" not in p.notes[0]


@pytest.mark.parametrize("ab, message", [
    ({"control": "C", "arms": {"A": 0.5, "B": 0.5}},
     "invalid field `ab.control`: 'C' is not one of ab.arms ['A', 'B']"),
    ({"control": "a", "arms": {"A": 0.5, "B": 0.5}},
     "invalid field `ab.control`: 'a' is not one of ab.arms ['A', 'B'] (did you mean 'A'?)"),
    ({"arms": {"A": 0.5, "B": 0.6}}, "invalid field `ab.arms`: the expected shares sum to 1.1 (A: 0.5, B: 0.6); "
     "they must sum to 1"),
    ({"arms": {"A": 50, "B": 50}}, "percentages? write them as fractions: A: 0.5, B: 0.5"),
    ({"control": "Z"}, "invalid field `ab.arms`: missing, but `ab.control` is 'Z': the control must be one of the "
     "arms"),  # tryout: loaded, and `driftline ab` silently used the first variant found as control
    ({"control": "A", "arms": {}, "design": "shadow"}, "invalid field `ab.arms`: missing, but `ab.control` is 'A'"),
])
def test_ab_mistakes_are_refused_at_config_load(ab, message) -> None:
    """A tryout: a control that is no arm loaded and failed only at `driftline ab`; shares summing to 1.1 were
    rescaled, so a balanced 50/50 split read as a sample-ratio mismatch (p 2.5e-28)."""
    with pytest.raises(ConfigError, match=re.escape(message)):
        from_dict({"ab": ab})


def test_ab_without_control_or_section_loads(tmp_path) -> None:
    """No `ab:` at all, or one without `control`, loads: the readout compares the variants found."""
    assert from_dict({}).ab.arms == {} and from_dict({}).ab.control_arm == "A"
    with pytest.raises(ConfigError, match=re.escape("invalid field `ab.control`: missing: with `ab.design: shadow`")):
        from_dict({"ab": {"design": "shadow"}})  # which arm is production must be said (verification tryout)
    path = tmp_path / "c.yaml"
    path.write_text("model: m\n")
    assert load(path).ab == AB()
    path.write_text("ab: {control: Z}\n")
    with pytest.raises(ConfigError, match=re.escape(f"config {path}, line 1: invalid field `ab.arms`: missing")):
        load(path)


def test_arm_shares_within_the_tolerance_load() -> None:
    assert from_dict({"ab": {"arms": {"A": 0.3333, "B": 0.3333, "C": 0.3333}}}).ab.arms["C"] == 0.3333
    assert from_dict({"ab": {"control": "ctl", "arms": {"ctl": 1}}}).ab.control == "ctl"


def test_cli_json_equals_document(split_db, capsys) -> None:
    url, store = split_db
    assert main(["--db", url, "ab", "--json", "--window", "7d"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got == json.loads(json.dumps(_doc(store, from_dict({}))))  # no --config: no costs
    at = got["window"]["end"]
    assert main(["--db", url, "ab", "--json", "--window", "3d", "--at", at, "--model", "fraud"]) == 0
    short = json.loads(capsys.readouterr().out)
    assert short["window"]["label"] == "3d" and short["window"]["end"] == at
    assert short["arms"]["A"]["predictions"] < got["arms"]["A"]["predictions"]
    assert main(["--db", url, "ab"]) == 0
    out = capsys.readouterr().out
    assert "B − A" in out and "Verdict:" in out and "sample ratio" in out


def test_the_cost_row_names_its_interval_as_the_readme_does(split_db, tmp_path, capsys) -> None:
    """Tryout: the text's cost row read `cost / 1,000 (mid_p_mover)`, an internal key; it names the interval as the
    README and the report do (mid-p, MOVER); the JSON keeps the key."""
    url, _ = split_db
    cfg = tmp_path / "c.yaml"
    cfg.write_text(json.dumps(PRICED))
    assert main(["--config", str(cfg), "--db", url, "ab", "--window", "7d"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "cost / 1,000 (mid-p, MOVER)" in out and "mid_p_mover" not in out
    assert main(["--config", str(cfg), "--db", url, "ab", "--window", "7d", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["comparisons"][0]["cost_per_1000"]["method"] == "mid_p_mover"


def test_shadow_labels_following_the_control_are_flagged(tmp_path) -> None:
    """Labels mostly for what A (live) flags: positives A misses are under-labelled; the verdict says so."""
    config = from_dict({"ab": SHADOW_AB})
    raws, truth = _shadow_events(13, n=2000, only_a=0, unflagged_labelled=0.3)
    store = _ingest(f"sqlite:///{tmp_path / 'follow.db'}", config, raws)
    doc = _doc(store, config)
    lf = doc["comparisons"][0]["paired"]["labels_follow_control"]
    fa, lab = truth["fa"], truth["labelled"]
    assert lf["warning"] is True
    assert (lf["coverage_flagged"]["k"], lf["coverage_flagged"]["n"]) == (int((lab & fa).sum()), int(fa.sum()))
    assert (lf["coverage_unflagged"]["k"], lf["coverage_unflagged"]["n"]) == (int((lab & ~fa).sum()),
                                                                            int((~fa).sum()))
    assert "Caution: labels follow A's flags" in doc["verdict"] and "biased in favour of A" in doc["verdict"]
    store.close()


def test_shadow_readout_same_on_postgres(pg_url, tmp_path) -> None:
    """The paired GROUP BY query and the whole readout agree between SQLite and PostgreSQL."""
    config = from_dict({"ab": SHADOW_AB})
    raws, truth = _shadow_events(12, n=800, only_a=5)
    docs = []
    for url in (f"sqlite:///{tmp_path / 's.db'}", pg_url):
        store = _ingest(url, config, raws)
        docs.append(_doc(store, config, seed=1))
        store.close()
    lite, pg = docs
    assert pg["comparisons"][0]["paired"]["pairs"] == 800
    assert pg["comparisons"][0]["paired"]["recall"]["treatment_only"] == int(
        (truth["labelled"] & truth["y"] & ~truth["fa"] & truth["fb"]).sum())
    assert lite["arms"] == pg["arms"] and lite["comparisons"] == pg["comparisons"]
    assert lite["verdict"] == pg["verdict"]
