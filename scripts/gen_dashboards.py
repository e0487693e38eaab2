#!/usr/bin/env python3
"""Generate the Grafana dashboards under deploy/grafana/dashboards/ (Overview, Drift, Calibration, A/B, Pipeline).

Run `python scripts/gen_dashboards.py` after editing and commit both this script and the JSON;
`--check` exits 1 when the committed JSON differs from what this script generates (tests/test_deploy.py runs it).
Metric names used here must be listed in docs/METRICS.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from driftline.readouts.absent import REASONS            # why a readout is absent (driftline_readout_unavailable)

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"
OUT_DIR = DEPLOY / "grafana" / "dashboards"
CONFIGMAP = DEPLOY / "kubernetes" / "grafana-dashboards.yaml"
"""The same dashboards as ConfigMaps for the Grafana sidecar (label grafana_dashboard: "1"), one per dashboard."""
sys.path.insert(0, str(Path(__file__).resolve().parent))  # dashboard_kit lies beside this script
from dashboard_kit import (  # noqa: E402  (after the path line above)
    DS, SEL, JOB, MOD, M, MW, ALL, REPLICAS, Panel, target, panel, timeseries, override, ratio_band,
    by_variant, stat, value_map, dashboard)


# --- dashboards -------------------------------------------------------------------------------------------

NO_TRIGGER = "no trigger configured for this model (config triggers:)"
NO_REFERENCE = ("no drift reference for this model yet: run `driftline reference set --from … --to …` "
                "(README, Reference profiles)")
ABSENT_TITLE = {"estimated": "Why the label-free estimate is absent",
                "multivariate": "Why multivariate drift is absent"}


def absent_no_value(readout: str) -> str:
    """noValue of a panel reading a readout that can be absent: where its reason is shown."""
    return (f"absent: see '{ABSENT_TITLE[readout]}' (no reference yet: run `driftline reference set --from … "
            "--to …`)")


def absent_reason(readout: str, pos: tuple[int, int, int, int]) -> Panel:
    """Table of why a readout of the window is absent (driftline_readout_unavailable), each reason code in words:
    a panel left blank by an absent readout points here (the CLI's calibration/drift notes say the same)."""
    words = {code: (text, "orange") for code, text in REASONS.items()}
    return panel("table", ABSENT_TITLE[readout], f"Why the {readout} readout of this model and window is not "
                 "exported, from driftline_readout_unavailable (docs/METRICS.md lists the reasons); empty while "
                 "it is exported.", "none",
                 [target(f'max by (readout, reason) (driftline_readout_unavailable{{{MW}, readout="{readout}"}})',
                         "", "A", instant=True)], pos,
                 no_value=f"none: the {readout} readout of this window is exported",
                 overrides=[override("byName", "reason", {"custom.cellOptions": {"type": "color-text"},
                                                          "mappings": value_map(words)})],
                 transformations=[{"id": "organize", "options": {"excludeByName": {"Time": True, "Value": True}}}],
                 options={"showHeader": True, "cellHeight": "sm"})


WILSON = "The band is the 95 % Wilson interval; a panel is empty while its denominator is 0 in the window."


POSITIVES_N = ("recall", "average_precision", "roc_auc")
MIN_N = "min n"
"""Display name (legend) of the min_n series, which Grafana's config-from-query matches by name."""
"""Trigger metrics whose minimum n counts labelled positives (triggers.rules: their min_n guard)."""


def positives_stat() -> Panel:
    """Labelled positives of the window, green from the largest configured min_n of the triggers counting them
    (driftline_trigger_min_n, via Grafana's config-from-query), so the colour follows the config, not a constant;
    with no such trigger there is no minimum (line at 0)."""
    p = stat("Labelled positives in window", f"max by (model) (driftline_window_positives{{{ALL}}})",
             "Labelled positive outcomes of the whole model in the window: the n behind recall. Green from the "
             "largest minimum n (config min_n) of the triggers counting positives (recall, average precision, ROC "
             "AUC); below it they report insufficient data and cannot fire. Under labels.policy: "
             "implicit_negative_after, while the window reaches into the maturity period, ROC AUC and average "
             "precision count the matured part's positives instead (Window counts: matured positives), fewer than "
             "shown here.", "short", (18, 0, 6, 4),
             thresholds=[(None, "orange")])
    metrics = "|".join(POSITIVES_N)
    p["targets"].append(target(f'max by (model) (driftline_trigger_min_n{{{MOD}, metric=~"{metrics}"}}) '
                               "or on () vector(0)", MIN_N, "N"))
    p["transformations"] = [{"id": "configFromData", "options": {
        "configRefId": "N", "applyTo": {"id": "byFrameRefID", "options": "A"},
        "mappings": [{"fieldName": MIN_N, "handlerKey": "threshold1",
                      "handlerArguments": {"threshold": {"color": "green"}}}]}}]
    return p


def overview() -> dict[str, Any]:
    """Online metrics against the pre-agreed trigger lines, label maturity and trigger states."""
    panels = [
        stat("Triggers firing",
             f"sum by (model) (max by (model, trigger) (driftline_trigger_firing{{{MOD}}}))",
             "Number of pre-agreed triggers of this model currently firing (each replica exports the same "
             "states, so each trigger counts once).", "short", (0, 0, 6, 4),
             thresholds=[(None, "green"), (1, "red")], no_value=NO_TRIGGER),
        stat("Triggers with insufficient data",
             f'sum by (model) (max by (model, trigger) (driftline_trigger_state{{{MOD}, state="insufficient_data"}}))',
             "Triggers whose window has fewer labelled cases than their minimum n: they cannot fire, so they are "
             "shown here instead of staying silent.", "short", (6, 0, 6, 4),
             thresholds=[(None, "green"), (1, "orange")], no_value=NO_TRIGGER),
        stat("Predictions in window", f"max by (model) (driftline_window_predictions{{{ALL}}})",
             "Predictions of the whole model (every arm and version) in the window, labelled or not.", "short",
             (12, 0, 6, 4)),
        positives_stat(),
        ratio_band("Recall", "recall",
                   "Share of labelled positives the model flagged (TP ÷ (TP + FN)) over the window, with the "
                   "recall trigger line (red, dashed). " + WILSON, (0, 4, 24, 8), trigger="recall"),
        ratio_band("False positive rate", "fpr",
                   "Share of labelled negatives the model flagged (FP ÷ (FP + TN)) over the window, with the FPR "
                   "trigger line (red, dashed). " + WILSON, (0, 12, 24, 8), trigger="fpr"),
        ratio_band("Precision", "precision",
                   "Share of labelled flagged predictions that are positive (TP ÷ (TP + FP)); a precision trigger "
                   "line is drawn when one is configured. " + WILSON, (0, 20, 24, 8), trigger="precision"),
        ratio_band("Alert volume (alert rate)", "alert_rate",
                   "Share of all predictions flagged at the deployed threshold: the review load the model "
                   "creates, available before any label arrives. " + WILSON, (0, 28, 24, 8)),
        ratio_band("Label coverage", "label_coverage",
                   "Share of the window's predictions that already have an outcome. Labelled metrics only speak "
                   "for this share; low coverage means they can still move. " + WILSON, (0, 36, 24, 8)),
        timeseries("Label delay", "Median and 95th percentile of outcome time minus prediction time for "
                   "predictions labelled in the window: how long until recall and FPR are mature.", "s",
                   [target(f'driftline_label_delay_seconds{{{M}, quantile="0.5"}}', "median {{variant}}", "A"),
                    target(f'driftline_label_delay_seconds{{{M}, quantile="0.95"}}', "p95 {{variant}}", "B")],
                   (0, 44, 12, 8), min_=0),
        timeseries("Window counts", "Predictions, labelled predictions, labelled positives, true and false "
                   "positives in the window: the evidence behind every rate on this dashboard. Under labels.policy: "
                   "implicit_negative_after, while the window reaches into the maturity period, the matured part's "
                   "counts too: the n of FPR, precision, specificity, accuracy, prevalence and the scores (and of "
                   "their triggers' min_n).", "short",
                   [target(f"driftline_window_predictions{{{M}}}", "predictions {{variant}}", "A"),
                    target(f"driftline_window_labelled{{{M}}}", "labelled {{variant}}", "B"),
                    target(f"driftline_window_positives{{{M}}}", "positives {{variant}}", "C"),
                    target(f"driftline_window_true_positives{{{M}}}", "true positives {{variant}}", "D"),
                    target(f"driftline_window_false_positives{{{M}}}", "false positives {{variant}}", "E"),
                    target(f"driftline_window_matured_labelled{{{M}}}", "matured labelled {{variant}}", "F"),
                    target(f"driftline_window_matured_positives{{{M}}}", "matured positives {{variant}}", "G"),
                    target(f"driftline_window_matured_true_positives{{{M}}}", "matured true positives {{variant}}",
                           "H"),
                    target(f"driftline_window_matured_false_positives{{{M}}}",
                           "matured false positives {{variant}}", "I")],
                   (12, 44, 12, 8), min_=0),
        timeseries("Prevalence, specificity and accuracy", "Share of labelled predictions that are positive "
                   "(prevalence), TN ÷ (TN + FP) (specificity) and (TP + TN) ÷ labelled (accuracy). Accuracy is "
                   "dominated by negatives at low prevalence: read it next to recall.", "percentunit",
                   [target(f"driftline_prevalence_ratio{{{M}}}", "prevalence {{variant}}", "A"),
                    target(f"driftline_specificity_ratio{{{M}}}", "specificity {{variant}}", "B"),
                    target(f"driftline_accuracy_ratio{{{M}}}", "accuracy {{variant}}", "C")],
                   (0, 52, 12, 8), min_=0, max_=1),
        panel("table", "Trigger states", "Current state of each pre-agreed trigger (ok, pending, firing, "
              "resolved, insufficient_data) with the value it judged and its line.", "none",
              [target(f"max without ({REPLICAS}) (driftline_trigger_state{{{MOD}}} == 1)", "", "A",
                      instant=True),
               target(f"max without ({REPLICAS}) (driftline_trigger_value{{{MOD}}})", "", "B",
                      instant=True),
               target(f"max without ({REPLICAS}, metric) (driftline_trigger_threshold{{{MOD}}})", "", "C",
                      instant=True)],
              (12, 52, 12, 8), decimals=3, no_value=NO_TRIGGER,
              overrides=[override("byName", "state", {"custom.cellOptions": {"type": "color-text"},
                                                      "mappings": value_map({
                                                          "ok": ("ok", "green"), "pending": ("pending", "orange"),
                                                          "firing": ("firing", "red"),
                                                          "resolved": ("resolved", "blue"),
                                                          "insufficient_data": ("insufficient data", "purple")})})],
              transformations=[{"id": "merge", "options": {}},
                               {"id": "organize", "options": {
                                   "excludeByName": {"Time": True, "Value #A": True},
                                   "renameByName": {"Value #B": "value", "Value #C": "threshold"}}}],
              options={"showHeader": True, "cellHeight": "sm"}),
        panel("state-timeline", "Trigger firing history", "When each trigger was firing (red) or not (green) "
              "over the selected time range.", "none",
              [target(f"max by (trigger) (driftline_trigger_firing{{{MOD}}})", "{{trigger}}", "A")], (0, 60, 24, 6),
              no_value=NO_TRIGGER,
              mappings=value_map({"0": ("not firing", "green"), "1": ("firing", "red")}),
              custom={"fillOpacity": 80, "lineWidth": 0},
              options={"showValue": "never", "mergeValues": True, "rowHeight": 0.8,
                       "legend": {"showLegend": False}}),
    ]
    return dashboard("driftline-overview", "driftline / Overview",
                     "Online metrics of a deployed classifier against its pre-agreed triggers.", panels)


def drift() -> dict[str, Any]:
    """Per-feature and score drift against the reference profile."""
    feature_var = {"type": "query", "name": "feature", "label": "Feature", "datasource": DS,
                   "query": f"label_values(driftline_feature_psi{{{MOD}}}, feature)",
                   "definition": f"label_values(driftline_feature_psi{{{MOD}}}, feature)",
                   "refresh": 2, "sort": 1, "multi": True, "includeAll": True, "allValue": ".*", "hide": 0,
                   "regex": "", "options": [], "current": {"selected": True, "text": ["All"], "value": ["$__all"]}}
    fsel = f'{MW}, feature=~"$feature"'
    psi_lines = [(None, "green"), (0.1, "orange"), (0.25, "red")]
    panels = [
        timeseries("Feature PSI", "Population stability index of each declared feature, window vs reference. "
                   "Rule of thumb: < 0.1 stable, 0.1–0.25 moderate shift (orange line), > 0.25 major shift "
                   "(red line).", "none", [target(f"driftline_feature_psi{{{fsel}}}", "{{feature}}")],
                   (0, 0, 24, 9), min_=0, decimals=3, thresholds=psi_lines, thresholds_style="dashed",
                   no_value=NO_REFERENCE),
        timeseries("Feature Jensen–Shannon distance", "Jensen–Shannon distance (base 2, 0 = same distribution, "
                   "1 = disjoint) of each feature, window vs reference; bounded, so comparable across features.",
                   "none", [target(f"driftline_feature_js_distance{{{fsel}}}", "{{feature}}")], (0, 9, 12, 8),
                   min_=0, max_=1, decimals=3, no_value=NO_REFERENCE),
        panel("state-timeline", "Features flagged as drifted", "Per feature, when the drift test flagged the "
              "window as drifted (red) or stable (green).", "none",
              [target(f"driftline_feature_drifted{{{fsel}}}", "{{feature}}")], (12, 9, 12, 8), no_value=NO_REFERENCE,
              mappings=value_map({"0": ("stable", "green"), "1": ("drifted", "red")}),
              custom={"fillOpacity": 80, "lineWidth": 0},
              options={"showValue": "never", "mergeValues": True, "rowHeight": 0.8,
                       "legend": {"showLegend": False}}),
        timeseries("Score PSI", "Population stability index of the model score distribution, window vs "
                   "reference: the score shifts before labels arrive. Same lines as feature PSI.", "none",
                   [target(f"driftline_score_psi{{{MW}}}", "score")], (0, 17, 12, 8), min_=0, decimals=3,
                   thresholds=psi_lines, thresholds_style="dashed", no_value=NO_REFERENCE),
        timeseries("Alert rate and prevalence", "Share of predictions flagged (no labels needed) next to the "
                   "share of labelled positives: a score shift shows in the alert rate first.", "percentunit",
                   [target(f"driftline_alert_rate_ratio{{{M}}}", "alert rate {{variant}}", "A"),
                    target(f"driftline_prevalence_ratio{{{M}}}", "prevalence {{variant}}", "B")],
                   (12, 17, 12, 8), min_=0),
        panel("table", "Most shifted features", "The ten features with the highest PSI in the window now.",
              "none", [target(f"topk(10, driftline_feature_psi{{{fsel}}})", "", "A", instant=True)],
              (0, 25, 24, 8), decimals=3, no_value=NO_REFERENCE,
              transformations=[{"id": "organize", "options": {
                  "excludeByName": {"Time": True, "__name__": True, "job": True, "instance": True},
                  "renameByName": {"Value": "PSI"}}},
                  {"id": "sortBy", "options": {"sort": [{"field": "PSI", "desc": True}]}}],
              options={"showHeader": True, "cellHeight": "sm"}),
        timeseries("Multivariate drift", "Mean PCA reconstruction error of the window's feature sample over the "
                   "reference's (1 = as expected; a changed relation between features raises it) and its "
                   "permutation p-value (dashed; below drift.alpha the window is called drifted).", "none",
                   [target(f"driftline_multivariate_drift_ratio{{{MW}}}", "error ratio", "A"),
                    target(f"driftline_multivariate_drift_p_value{{{MW}}}", "p-value", "B")],
                   (0, 33, 16, 8), min_=0, decimals=3, no_value=absent_no_value("multivariate"),
                   overrides=[override("byFrameRefID", "B", {"custom.lineStyle": {"fill": "dash",
                                                                                 "dash": [10, 10]}})]),
        absent_reason("multivariate", (16, 33, 8, 8)),
    ]
    return dashboard("driftline-drift", "driftline / Drift",
                     "Feature and score drift of the selected model, window vs reference profile.", panels,
                     extra_vars=[feature_var], time_from="now-7d")


def calibration() -> dict[str, Any]:
    """Calibration and discrimination of the score on labelled predictions."""
    leg = "{{variant}} {{model_version}}"
    panels = [
        timeseries("Expected calibration error", "Mean |observed positive rate − mean score| over score bins, "
                   "weighted by count: how far the score is from a probability.", "percentunit",
                   [target(f"driftline_ece{{{M}}}", leg)], (0, 0, 8, 8), min_=0),
        timeseries("Brier score", "Mean squared difference between score and outcome (0 is perfect; a constant "
                   "score equal to the prevalence p scores p(1 − p)).", "none",
                   [target(f"driftline_brier_score{{{M}}}", leg)], (8, 0, 8, 8), min_=0, decimals=4),
        timeseries("Log loss", "Mean negative log-likelihood of the outcomes under the score, in nats (lower "
                   "is better; punishes confident mistakes).", "none",
                   [target(f"driftline_log_loss{{{M}}}", leg)], (16, 0, 8, 8), min_=0, decimals=4),
        timeseries("ROC AUC", "Probability that a random positive scores above a random negative (0.5 = "
                   "chance). Threshold-free: compare with recall/FPR at the deployed threshold.", "none",
                   [target(f"driftline_roc_auc{{{M}}}", leg)], (0, 8, 12, 8), min_=0.5, max_=1, decimals=3),
        timeseries("Average precision", "Area under the precision–recall curve; its chance level is the "
                   "prevalence (dashed series).", "none",
                   [target(f"driftline_average_precision{{{M}}}", leg, "A"),
                    target(f"driftline_prevalence_ratio{{{M}}}", "prevalence (chance) {{variant}}", "B")],
                   (12, 8, 12, 8), min_=0, max_=1, decimals=3,
                   overrides=[override("byFrameRefID", "B", {"custom.lineStyle": {"fill": "dash",
                                                                                 "dash": [10, 10]}})]),
        timeseries("Label-free estimates", "Recall, precision and FPR of all the window's predictions estimated "
                   "from their scores, calibrated on the active reference's labels (before labels arrive; assumes "
                   "the reference's score-label relation). Trusted 0 (dashed) means do not act on it.",
                   "percentunit",
                   [target(f"driftline_estimated_recall_ratio{{{MW}}}", "recall (estimated)", "A"),
                    target(f"driftline_estimated_precision_ratio{{{MW}}}", "precision (estimated)", "B"),
                    target(f"driftline_estimated_fpr_ratio{{{MW}}}", "FPR (estimated)", "C"),
                    target(f"driftline_estimated_trusted{{{MW}}}", "trusted", "D")],
                   (0, 16, 16, 8), min_=0, max_=1, decimals=3, no_value=absent_no_value("estimated"),
                   overrides=[override("byFrameRefID", "D", {"custom.lineStyle": {"fill": "dash",
                                                                                 "dash": [10, 10]}})]),
        absent_reason("estimated", (16, 16, 8, 8)),
    ]
    return dashboard("driftline-calibration", "driftline / Calibration",
                     "Calibration (ECE, Brier, log loss) and discrimination (ROC AUC, AP) over the window.",
                     panels, time_from="now-7d")


def ab() -> dict[str, Any]:
    """A/B arms side by side: traffic split, n, and recall/FPR/precision with their intervals per arm."""
    total = f"scalar(max by (model) (driftline_window_predictions{{{ALL}}}))"
    per_arm = f"sum by (variant) (max by (variant, model_version) (driftline_window_predictions{{{M}}}))"
    panels = [
        by_variant("Traffic share", f"{per_arm} / {total}",
                   "Share of the window's predictions served by each arm (the whole-model series \"all\" is "
                   "100 %); compare with the planned split.",
                   "percentunit", (0, 0, 12, 7), legend="{{variant}}", min_=0, max_=1),
        by_variant("Labelled positives per arm", f"driftline_window_positives{{{M}}}",
                   "Labelled positives per arm in the window: the n behind each arm's recall.", "short",
                   (12, 0, 12, 7), min_=0),
        by_variant("Recall by arm", f"driftline_recall_ratio{{{M}}}",
                   "Recall estimate of each arm on one axis (intervals in the per-arm panels below).",
                   "percentunit", (0, 7, 8, 8), min_=0, max_=1),
        by_variant("FPR by arm", f"driftline_fpr_ratio{{{M}}}",
                   "False positive rate estimate of each arm on one axis.", "percentunit", (8, 7, 8, 8), min_=0),
        by_variant("Precision by arm", f"driftline_precision_ratio{{{M}}}",
                   "Precision estimate of each arm on one axis.", "percentunit", (16, 7, 8, 8), min_=0, max_=1),
        ratio_band("Recall", "recall", "Recall of one arm with its interval and the recall trigger line. "
                   + WILSON, (0, 15, 24, 8), trigger="recall"),
        ratio_band("FPR", "fpr", "False positive rate of one arm with its interval and the FPR trigger line. "
                   + WILSON, (0, 23, 24, 8), trigger="fpr"),
        ratio_band("Precision", "precision", "Precision of one arm with its interval. " + WILSON,
                   (0, 31, 24, 8), trigger="precision"),
        by_variant("Label coverage by arm", f"driftline_label_coverage_ratio{{{M}}}",
                   "Share of each arm's predictions that have an outcome: compare arms only at similar coverage.",
                   "percentunit", (0, 39, 12, 8), min_=0, max_=1),
        by_variant("Alert rate by arm", f"driftline_alert_rate_ratio{{{M}}}",
                   "Share of each arm's predictions flagged: the review load of each arm.", "percentunit",
                   (12, 39, 12, 8), min_=0),
    ]
    return dashboard("driftline-ab", "driftline / A/B",
                     "A/B arms (variant label) of the selected model side by side.", panels, time_from="now-7d",
                     variant="$__all")


IDLE = "idle: no message read in 10 minutes"
NOT_RUNNING = "not running: only `driftline run` (the Kafka consumer) reports this"


def pipeline() -> dict[str, Any]:
    """Ingestion health: throughput, lag, rejects, duplicates, latency, freshness and notifications."""
    panels = [
        stat("Exporter up", f"min by (job) (up{{{SEL}}})", "Whether Prometheus can scrape every driftline "
             "exporter of the job (1 = up).", "none", (0, 0, 6, 4), thresholds=[(None, "red"), (1, "green")],
             mappings=value_map({"0": ("down", "red"), "1": ("up", "green")}),
             no_value="no scrape target: Prometheus has no driftline job"),
        stat("Pending outcomes", f"max by (job) (driftline_pending_outcomes{{{SEL}}})", "Outcomes waiting for "
             "their prediction to arrive (they are joined when it does).", "short", (6, 0, 6, 4)),
        stat("Dead-letter ratio (10 m)", f"max by (job) (job:driftline_dead_letters:ratio_rate10m{{{JOB}}})",
             "Share of messages rejected over the last 10 minutes (alert above 1 %).", "percentunit",
             (12, 0, 6, 4), thresholds=[(None, "green"), (0.01, "red")],
             no_value=IDLE),
        panel("table", "Build", "Version of each running driftline process.", "none",
              [target(f"driftline_build_info{{{SEL}}}", "", "A", instant=True)], (18, 0, 6, 4),
              transformations=[{"id": "organize", "options": {
                  "excludeByName": {"Time": True, "Value": True, "__name__": True, "job": True}}}],
              options={"showHeader": True, "cellHeight": "sm"}),
        timeseries("Events per second", "Events accepted per second by type (5 m rate).", "cps",
                   [target(f"job_type:driftline_events:rate5m{{{JOB}}}", "{{type}}")], (0, 4, 12, 8), min_=0),
        timeseries("Consumer lag", "Messages between the end of each partition and the consumer group's "
                   "committed offset (alert when a topic is above 10 000 for 15 m).", "short",
                   [target(f"driftline_consumer_lag_messages{{{SEL}}}", "{{instance}} {{topic}}/{{partition}}")],
                   (12, 4, 12, 8), min_=0, thresholds=[(None, "green"), (10000, "red")], thresholds_style="dashed",
                   no_value=NOT_RUNNING),
        timeseries("Dead letters per second", "Messages rejected per second, by machine-readable reason.",
                   "cps", [target(f"job_reason:driftline_dead_letters:rate5m{{{JOB}}}", "{{reason}}")], (0, 12, 12, 8),
                   min_=0),
        timeseries("Dead-letter ratio", "Dead letters ÷ (accepted events + dead letters) over 10 m; the red "
                   "line is the 1 % alert threshold.", "percentunit",
                   [target(f"job:driftline_dead_letters:ratio_rate10m{{{JOB}}}", "{{job}}")], (12, 12, 12, 8), min_=0,
                   thresholds=[(None, "green"), (0.01, "red")], thresholds_style="dashed", no_value=IDLE),
        timeseries("Duplicates per second", "Events whose id was already seen, per second by type (the first "
                   "copy counts, later copies only here).", "cps",
                   [target(f"job_type:driftline_duplicates:rate5m{{{JOB}}}", "{{type}}")], (0, 20, 12, 8), min_=0),
        timeseries("Batch duration", "Wall time to decode, accumulate and commit one batch: 50th, 95th and "
                   "99th percentiles over 5 m.", "s",
                   [target(f"job:driftline_batch_duration_seconds:quantile_rate5m{{{JOB}}}", "p{{quantile}}")],
                   (12, 20, 12, 8), min_=0, no_value=NOT_RUNNING + " (no batch in 5 minutes)"),
        timeseries("Time since last event", "Seconds since predictions and outcomes were last stored (wall "
                   "clock of arrival, not the events' own ts, which a skewed producer clock can put ahead): rising "
                   "steadily means the feed stopped.", "s",
                   [target(f"job_type:driftline_last_event_age_seconds:min{{{JOB}}}", "{{type}}")], (0, 28, 12, 8),
                   min_=0),
        timeseries("Expired predictions per second", "Predictions dropped from the join state after the "
                   "label horizon without an outcome.", "cps",
                   [target(f"job:driftline_expired_predictions:rate5m{{{JOB}}}", "expired")], (12, 28, 12, 8),
                   min_=0),
        timeseries("Notifications", "Notifications delivered and failed attempts per second, by receiver "
                   "(Alertmanager API, webhook).", "cps",
                   [target(f"job_receiver:driftline_notifications_sent:rate5m{{{JOB}}}", "sent {{receiver}}", "A"),
                    target(f"job_receiver:driftline_notifications_failed:rate5m{{{JOB}}}", "failed {{receiver}}",
                           "B")],
                   (0, 36, 12, 8), min_=0, no_value="no receiver: config notify: has no alertmanager_url or "
                   "webhook_url (alerts are only logged and stored)",
                   overrides=[override("byFrameRefID", "B", {"color": {"mode": "fixed", "fixedColor": "red"}})]),
        timeseries("Records per batch", "Mean Kafka records per stored batch over 5 m: near kafka.batch_max_records "
                   "while a backlog is caught up, small when events are stored as they arrive.", "short",
                   [target(f"job:driftline_batch_records:mean_rate5m{{{JOB}}}", "mean")], (12, 36, 12, 8),
                   min_=0, no_value=NOT_RUNNING + " (no batch in 5 minutes)"),
    ]
    return dashboard("driftline-pipeline", "driftline / Pipeline",
                     "Ingestion health of driftline: throughput, lag, rejects, latency and notifications.",
                     panels, time_from="now-6h",
                     # driftline's own alerts (meta.rules.yml: no model label), not the model's triggers
                     alerts_of='model=""', alert_tags="severity,instance,topic")


DASHBOARDS = {"driftline-overview": overview, "driftline-drift": drift, "driftline-calibration": calibration,
              "driftline-ab": ab, "driftline-pipeline": pipeline}


def render_all() -> dict[str, str]:
    """File name -> JSON text of every dashboard (stable formatting so regeneration is diff-free)."""
    return {f"{uid}.json": json.dumps(build(), indent=2, ensure_ascii=False) + "\n"
            for uid, build in DASHBOARDS.items()}


def configmaps(rendered: dict[str, str]) -> str:
    """The dashboards as Kubernetes ConfigMaps (one YAML document each) for the Grafana sidecar, which loads every
    ConfigMap labelled grafana_dashboard="1" into the folder named by its grafana_folder annotation."""
    docs = []
    for name, text in rendered.items():
        cm = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": f"grafana-dashboard-{name.removesuffix('.json')}",
                           "labels": {"app.kubernetes.io/name": "driftline", "grafana_dashboard": "1"},
                           "annotations": {"grafana_folder": "driftline"}},
              "data": {name: text}}
        docs.append(json.dumps(cm, indent=2, ensure_ascii=False))   # JSON is YAML: no YAML emitter needed
    return ("# Generated by scripts/gen_dashboards.py (the Grafana dashboards of deploy/grafana/dashboards as\n"
            "# ConfigMaps for the Grafana sidecar); do not edit by hand.\n" + "\n---\n".join(docs) + "\n")


def main(argv: list[str] | None = None) -> int:
    """Write the dashboards, or with --check report (exit 1) the ones that differ from the committed files."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="output directory")
    parser.add_argument("--configmap", type=Path, default=CONFIGMAP, help="Kubernetes ConfigMap file")
    args = parser.parse_args(argv)
    stale = []
    rendered = render_all()
    files = {args.out / name: text for name, text in rendered.items()}
    files[args.configmap] = configmaps(rendered)
    for path, text in files.items():
        name = path.name
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    if stale:
        print("out of date (run scripts/gen_dashboards.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
