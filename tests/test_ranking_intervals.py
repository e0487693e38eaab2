"""95 % intervals of ROC AUC and average precision: DeLong's variance against its definition (the O(m·n) placement
matrix) on random data with ties, the histogram form against the pairs form, both intervals written out with
scipy, coverage by simulation on binormal models whose true AUC and AP are known, the computation bound added;
then where users meet them: `metrics --json`, confident triggers (they judged the estimate before), the exporter,
and the rendered Prometheus rules run by the real promtool."""

from __future__ import annotations

import json
import math
import time
from dataclasses import replace
from datetime import datetime

import numpy as np
import pytest
from scipy.stats import norm
from sklearn.metrics import average_precision_score, roc_auc_score

from driftline.analysis.ranking_intervals import ap_interval, auc_interval, delong_variance, delong_variance_hist
from driftline.analysis.rates import Z95
from driftline.analysis.ranking import exact_ranking, histogram_ranking
from driftline.config import from_dict
from driftline.triggers.metrics import from_metrics, info
from driftline.triggers.model import Rule, judged_value
from driftline.triggers.notify import summary
from driftline.triggers.model import TriggerState
from driftline.triggers.rules import render_rules, to_yaml

from test_triggers import _promtool_test


def definitional_variance(scores: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """(DeLong variance, AUC) straight from the definition: ψ(x, y) = 1 if x > y, ½ if equal, for every pair."""
    x, y = scores[labels == 1], scores[labels == 0]
    psi = (x[:, None] > y[None, :]) + 0.5 * (x[:, None] == y[None, :])
    v10, v01 = psi.mean(axis=1), psi.mean(axis=0)
    return v10.var(ddof=1) / len(x) + v01.var(ddof=1) / len(y), float(psi.mean())


def test_delong_variance_equals_its_definition_on_random_data_with_ties():
    rng = np.random.default_rng(20261204)
    checked = 0
    for trial in range(60):
        n = int(rng.integers(4, 400))
        places = int(rng.integers(1, 4))  # 1 place: heavy ties; 3: few
        scores = np.round(rng.beta(2, 5, n) + 0.2 * rng.random(n), places)
        labels = (rng.random(n) < rng.uniform(0.05, 0.6)).astype(np.int64)
        if min(labels.sum(), n - labels.sum()) < 2:
            assert delong_variance(scores, labels) is None
            continue
        want, auc = definitional_variance(scores, labels)
        assert auc == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
        assert delong_variance(scores, labels) == pytest.approx(want, rel=1e-9, abs=1e-15)
        values = np.unique(scores)  # one bin per distinct score: the histogram form sees the same ties
        at = np.searchsorted(values, scores)
        pos = np.bincount(at[labels == 1], minlength=len(values))
        neg = np.bincount(at[labels == 0], minlength=len(values))
        assert delong_variance_hist(pos, neg) == pytest.approx(want, rel=1e-9, abs=1e-15)
        checked += 1
    assert checked > 40


def test_too_few_of_a_class_separated_classes_or_equal_scores_have_no_interval():
    assert delong_variance(np.array([0.1, 0.9, 0.8]), np.array([0, 1, 1])) is None
    assert delong_variance_hist(np.array([0, 3]), np.array([1, 0])) is None
    assert auc_interval(None, 0.01, 0.0) is None and auc_interval(0.7, None, 0.0) is None
    var = delong_variance(np.array([0.1, 0.2, 0.8, 0.9]), np.array([0, 0, 1, 1]))
    assert var == 0.0 and auc_interval(1.0, var, 0.0) is None  # a zero-width [1, 1] claimed certainty (tryout 2)
    same = delong_variance(np.full(40, 0.3), np.r_[np.ones(10, dtype=np.int64), np.zeros(30, dtype=np.int64)])
    assert same == 0.0 and auc_interval(0.5, same, 0.0) is None  # a constant score: [0.5, 0.5] before


def logit_interval(auc: float, variance: float, bound: float) -> tuple[float, float]:
    """The interval written out: logit(auc) ± z·se/(auc(1−auc)) mapped back with scipy's expit, ± bound."""
    from scipy.special import expit, logit
    w = Z95 * math.sqrt(variance) / (auc * (1 - auc))
    return max(0.0, float(expit(logit(auc) - w)) - bound), min(1.0, float(expit(logit(auc) + w)) + bound)


def test_the_interval_is_the_logit_wald_interval_plus_the_bound_within_0_1():
    for auc, var, bound in ((0.8, 0.0004, 0.001), (0.99, 0.0004, 0.0), (0.5, 0.01, 0.0), (0.03, 1e-4, 0.002)):
        lo, hi = auc_interval(auc, var, bound)
        assert (lo, hi) == pytest.approx(logit_interval(auc, var, bound), abs=1e-12)
        assert 0.0 <= lo < auc < hi <= 1.0
    assert auc_interval(0.99, 0.0004, 0.0)[1] < 1.0  # a plain ±z·se would pass 1 here (0.99 + 0.039)
    # a histogram result: the interval holds its bound on top of the sampling error
    rng = np.random.default_rng(7)
    pos = rng.integers(0, 5, 50)
    neg = rng.integers(0, 40, 50)
    r = histogram_ranking(pos, neg)
    assert r.roc_auc_bound > 0
    lo, hi = r.roc_auc_interval
    assert (lo, hi) == pytest.approx(logit_interval(r.roc_auc, delong_variance_hist(pos, neg), r.roc_auc_bound))


def test_the_ap_interval_is_boyds_logit_interval_plus_the_bound():
    from scipy.special import expit, logit
    for ap, pos, bound in ((0.25, 1800, 0.0001), (0.6, 30, 0.0), (0.97, 12, 0.002)):
        w = Z95 / math.sqrt(pos * ap * (1 - ap))
        want = (max(0.0, float(expit(logit(ap) - w)) - bound), min(1.0, float(expit(logit(ap) + w)) + bound))
        assert ap_interval(ap, pos, bound) == pytest.approx(want, abs=1e-12)
    assert ap_interval(0.5, 1, 0.0) is None and ap_interval(None, 50, 0.0) is None
    assert ap_interval(1.0, 5, 0.0) is None  # every positive on top (or no negatives): nothing to size it by


def binormal_ap(delta: float, prevalence: float) -> float:
    """True AP of positives ~ N(δ, 1) among negatives ~ N(0, 1): ∫ precision d(recall) over all thresholds."""
    t = np.linspace(-12, 16, 400_001)
    tpr, fpr = norm.sf(t - delta), norm.sf(t)
    precision = prevalence * tpr / (prevalence * tpr + (1 - prevalence) * fpr)
    return float(np.trapezoid(precision[::-1], tpr[::-1]))


def test_ap_coverage_at_two_percent_prevalence():
    """60 positives among 3,000 (the fraud stream's 2 %), δ = 2: true AP 0.375; 400 windows."""
    rng = np.random.default_rng(5)
    truth = binormal_ap(2.0, 0.02)
    assert truth == pytest.approx(0.3752, abs=1e-4)
    hits = 0
    for _ in range(400):
        scores = np.r_[rng.normal(2.0, 1, 60), rng.normal(0, 1, 2940)]
        labels = np.r_[np.ones(60, dtype=np.int64), np.zeros(2940, dtype=np.int64)]
        lo, hi = exact_ranking(scores, labels).average_precision_interval
        hits += lo <= truth <= hi
    assert 0.93 <= hits / 400 <= 0.99, hits / 400


@pytest.mark.parametrize("delta", [1.2, 2.5])
def test_coverage_on_a_binormal_model_is_near_95_percent(delta):
    """Positives ~ N(δ, 1), negatives ~ N(0, 1): AUC = Φ(δ/√2) (0.80 and 0.96). 600 windows of 60 positives and
    240 negatives; at 0.96 the plain AUC ± z·se held the truth in 91.3 % of them, the logit interval in 93.7 %
    (94.5 % and 94.3 % at 0.80)."""
    rng = np.random.default_rng(11)
    truth = float(norm.cdf(delta / math.sqrt(2)))
    hits = 0
    reps = 600
    for _ in range(reps):
        scores = np.r_[rng.normal(delta, 1, 60), rng.normal(0, 1, 240)]
        labels = np.r_[np.ones(60, dtype=np.int64), np.zeros(240, dtype=np.int64)]
        lo, hi = exact_ranking(scores, labels).roc_auc_interval
        hits += lo <= truth <= hi
    # binomial sd at 95 % over 600 windows is 0.9 %: [0.925, 0.975] is 2.7 sd either side
    assert 0.925 <= hits / reps <= 0.975, hits / reps


def test_metrics_json_trigger_and_notice_judge_the_interval(tmp_path, capsys):
    from driftline import cli

    db = tmp_path / "m.db"
    events = tmp_path / "e.jsonl"
    assert cli.main(["simulate", "--days", "3", "--per-day", "3000", "--seed", "5", "--out", str(events)]) == 0
    assert cli.main(["--db", f"sqlite:///{db}", "replay", str(events)]) == 0
    capsys.readouterr()
    assert cli.main(["--db", f"sqlite:///{db}", "metrics", "--json", "--window", "3d"]) == 0
    doc = json.loads(capsys.readouterr().out)["metrics"]
    auc, ap = doc["roc_auc"], doc["average_precision"]
    assert auc["interval"] == "delong" and auc["low"] < auc["value"] < auc["high"]
    assert ap["interval"] == "logit" and ap["low"] < ap["value"] < ap["high"]
    # the same labelled pairs read back from the join rows: the interval holds sklearn's value and has DeLong's
    # half-width (plus the bound) on them
    from driftline.storage.store import Store
    with Store(f"sqlite:///{db}").read() as conn:
        rows = np.array(conn.exec_driver_sql("SELECT score, label FROM predictions WHERE label IS NOT NULL "
                                             "AND model = 'fraud'").fetchall(), dtype=np.float64)
    scores, labels = rows[:, 0], rows[:, 1].astype(np.int64)
    exact = roc_auc_score(labels, scores)
    assert auc["low"] <= exact <= auc["high"]
    assert ap["low"] <= average_precision_score(labels, scores) <= ap["high"]
    assert (ap["low"], ap["high"]) == pytest.approx(ap_interval(ap["value"], int(labels.sum()), ap["bound"]))
    want = logit_interval(auc["value"], definitional_variance(scores, labels)[0], auc["bound"])
    assert (auc["low"], auc["high"]) == pytest.approx(want, rel=1e-3)
    # the exporter: every window's ROC AUC comes with both bounds around it
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.parser import text_string_to_metric_families
    from driftline.config import Config
    from driftline.exporter.collector import SnapshotCollector
    reg = CollectorRegistry()
    reg.register(SnapshotCollector(Store(f"sqlite:///{db}"), Config(), clock=time.time))  # simulate ends now
    got: dict[str, dict[frozenset, float]] = {}
    for fam in text_string_to_metric_families(generate_latest(reg).decode()):
        for smp in fam.samples:
            got.setdefault(smp.name, {})[frozenset(smp.labels.items())] = smp.value
    assert got.get("driftline_roc_auc")
    for series in ("driftline_roc_auc", "driftline_average_precision"):
        for key, value in got[series].items():
            assert got[f"{series}_lower"][key] <= value <= got[f"{series}_upper"][key]
    # the weekly report with targets on both (second tryout: a roc_auc target crashed it, numpy.bool_ in JSON)
    cfg = tmp_path / "t.yaml"
    cfg.write_text("targets: {roc_auc: 0.5, average_precision: 0.99}\n"
                   "triggers: [{name: auc, metric: roc_auc, op: '<', value: 0.6, min_n: 5}]\n")
    capsys.readouterr()
    assert cli.main(["--config", str(cfg), "--db", f"sqlite:///{db}", "report", "--json",
                     "--out", str(tmp_path / "r")]) == 0
    report = json.loads(capsys.readouterr().out)["report"]
    rows = {r["metric"]: r for r in report["headline"]["rows"]}
    assert rows["roc_auc"]["low"] < rows["roc_auc"]["value"] < rows["roc_auc"]["high"]
    assert rows["roc_auc"]["target"]["met_confidently"] is True and rows["average_precision"]["target"]["met"] is False
    # the report reads one ISO week: the labels of its window, not the whole database (CI on a Monday: the three
    # simulated days straddled two weeks and the count was 90 of the database's 91 positives)
    start, end = (datetime.fromisoformat(report["window"][k].replace("Z", "+00:00")).timestamp()
                  for k in ("start", "end"))
    with Store(f"sqlite:///{db}").read() as conn:
        week_labels = np.array([r[0] for r in conn.exec_driver_sql(
            "SELECT label FROM predictions WHERE label IS NOT NULL AND model = 'fraud' AND ts >= ? AND ts < ?",
            (start, end)).fetchall()], dtype=np.int64)
    positives = int(week_labels.sum())
    assert rows["roc_auc"]["n"] == min(positives, len(week_labels) - positives)  # as triggers read it
    assert rows["average_precision"]["n"] == positives


def _metrics_for(scores: np.ndarray, labels: np.ndarray):
    from driftline.analysis.classification import classification
    from driftline.core.stats import BucketStats
    stats = BucketStats()
    return classification(stats, exact_ranking(scores, labels))


def test_confident_roc_auc_and_ap_triggers_judge_the_bound_nearest_the_line():
    rng = np.random.default_rng(3)
    scores = np.r_[rng.normal(1.0, 1, 80), rng.normal(0, 1, 400)]
    labels = np.r_[np.ones(80, dtype=np.int64), np.zeros(400, dtype=np.int64)]
    m = _metrics_for(scores, labels)
    o = from_metrics("roc_auc", m)
    lo, hi = m.ranking.roc_auc_interval
    assert (o.value, o.low, o.high) == (m.roc_auc, lo, hi) and info("roc_auc").has_interval
    below = Rule(name="auc_low", metric="roc_auc", op="<", value=0.8, mode="confident")
    above = Rule(name="auc_high", metric="roc_auc", op=">", value=0.6, mode="confident")
    assert judged_value(below, o) == hi and judged_value(above, o) == lo
    point = Rule(name="auc_point", metric="roc_auc", op="<", value=0.8)
    assert judged_value(point, o) == o.value
    state = TriggerState(trigger="auc_low", state="firing", since=0.0, updated_at=0.0, window="7d", value=o.value,
                         low=lo, high=hi, judged=hi, n=80)
    assert summary(below, "fraud", state, "firing").startswith("upper 95% bound of roc_auc of fraud")
    ap = Rule(name="ap_low", metric="average_precision", op="<", value=0.5, mode="confident")
    o_ap = from_metrics("average_precision", m)
    assert (o_ap.low, o_ap.high) == m.ranking.average_precision_interval and judged_value(ap, o_ap) == o_ap.high
    assert summary(ap, "fraud", state, "firing").startswith("upper 95% bound of average_precision of fraud")
    # a window where the interval cannot be given (1 positive): a confident trigger has nothing to judge, as its
    # Prometheus rule has no bound series then; it judged the estimate and said "upper 95% bound" (tryout 2)
    one = _metrics_for(np.array([0.9, 0.2, 0.4, 0.1]), np.array([1, 0, 0, 0]))
    o1 = from_metrics("roc_auc", one)
    assert o1.value == 1.0 and o1.high is None and judged_value(below, o1) is None
    from driftline.triggers.model import INSUFFICIENT, evaluate
    assert evaluate(replace(below, min_n=1), None, o1, 100.0).state.state == INSUFFICIENT
    assert judged_value(point, o1) == 1.0
    f1 = Rule(name="f1_low", metric="f1", op="<", value=0.5, mode="confident")
    assert summary(f1, "fraud", state, "firing").startswith("f1 of fraud")  # no interval: judged on the estimate


@pytest.mark.parametrize("metric,series,alert,method", [
    ("roc_auc", "driftline_roc_auc", "AucBelowTarget", "DeLong"),
    ("average_precision", "driftline_average_precision", "ApBelowTarget", "logit")])
def test_rendered_confident_rule_reads_the_upper_bound_promtool_test_rules(tmp_path, metric, series, alert, method):
    name = "auc_below_target" if metric == "roc_auc" else "ap_below_target"
    cfg = from_dict({"triggers": [{"name": name, "metric": metric, "op": "<", "value": 0.8,
                                   "severity": "warning", "mode": "confident", "min_n": 30, "cooldown": "1m"}]})
    text = to_yaml(render_rules(cfg))
    assert f"{series}_upper{{" in text
    sel = 'model="fraud", model_version="all", variant="all", window="7d"'
    labels = {"severity": "warning", "trigger": name, "model": "fraud", "model_version": "all",
              "variant": "all", "window": "7d"}
    title = {"roc_auc": ("ROC AUC", "roc auc"), "average_precision": ("average precision", "average precision")}
    res = _promtool_test(tmp_path, text, f"""
        rule_files: [r.yml]
        evaluation_interval: 1m
        tests:
          - interval: 1m
            input_series:
              - series: '{series}{{{sel}}}'
                values: '0.75x30'
              - series: '{series}_lower{{{sel}}}'
                values: '0.70x30'
              - series: '{series}_upper{{{sel}}}'
                values: '0.82x10 0.79x20'
              - series: 'driftline_window_positives{{{sel}}}'
                values: '50x30'
              - series: 'driftline_window_labelled{{{sel}}}'
                values: '500x30'
            alert_rule_test:
              - eval_time: 5m
                alertname: {alert}
                exp_alerts: []
              - eval_time: 25m
                alertname: {alert}
                exp_alerts:
                  - exp_labels: {json.dumps(labels)}
                    exp_annotations:
                      summary: "Upper 95% bound of {title[metric][0]} of fraud is 0.790 over 7d (line < 0.80)"
                      description: "The upper bound of the 95% interval of {title[metric][1]} of model fraud (version all, variant all) over the last 7d is 0.790, under the agreed line of 0.80 (95% {method} interval 0.700 to 0.790)."
                      runbook_url: "https://github.com/driftline/driftline/blob/main/docs/RUNBOOKS.md#{alert.lower()}"
    """)
    assert res.returncode == 0, res.stdout + res.stderr
