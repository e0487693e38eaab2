"""The exported windowed series: their names and help texts, kept apart from the collector so the documented
series bound (bounds.py) counts the same lists the collector writes."""

from __future__ import annotations

RATE_HELP = {
    "recall": "TP / (TP + FN): share of labelled positives the model flagged",
    "fpr": "FP / (FP + TN): share of labelled negatives the model flagged",
    "precision": "TP / (TP + FP): share of labelled flagged predictions that are positive",
    "alert_rate": "flagged / all predictions (labelled or not)",
    "label_coverage": "predictions with an outcome / all predictions in the window",
    "prevalence": "labelled positives / labelled predictions",
    "specificity": "TN / (TN + FP) = 1 - FPR",
    "accuracy": "(TP + TN) / labelled predictions",
}
COUNT_HELP = {
    "predictions": "Predictions in the window (labelled or not).",
    "labelled": "Predictions in the window that have an outcome.",
    "positives": "Labelled predictions whose outcome is positive (TP + FN): the n of recall.",
    "true_positives": "Flagged predictions with a positive outcome (TP).",
    "false_positives": "Flagged predictions with a negative outcome (FP).",
    "matured_predictions": ("Predictions of the window at least labels.implicit_negative_after old: the n behind "
                            "every exported metric that reads negatives (exported only while the window reaches "
                            "past them)."),
    "awaiting_implicit": "Younger predictions of the window still without an outcome: awaiting their implicit label.",
    "matured_labelled": "Labelled predictions of the window's matured part (likewise): the n of accuracy, prevalence "
                        "and the calibration scores.",
    "matured_positives": "Labelled positives of the window's matured part (likewise): with matured_labelled, the n "
                         "of FPR and specificity (negatives) and of ROC AUC and average precision.",
    "matured_true_positives": "Flagged positives (TP) of the window's matured part (likewise).",
    "matured_false_positives": "Flagged negatives (FP) of the window's matured part (likewise): with "
                               "matured_true_positives, the n of precision.",
}
SCORE_HELP = {
    "roc_auc": ("driftline_roc_auc", "ROC AUC of the score on labelled predictions (0.5 = chance)."),
    "average_precision": ("driftline_average_precision", "Average precision (area under the PR curve)."),
    "brier": ("driftline_brier_score", "Mean squared error of the score as a probability."),
    "log_loss": ("driftline_log_loss", "Mean negative log-likelihood of the outcomes under the score (nats)."),
    "ece": ("driftline_ece", "Expected calibration error over 10 score bins, weighted by count."),
}
RANKING_EXTRA = ("driftline_roc_auc_lower", "driftline_roc_auc_upper", "driftline_average_precision_lower",
                 "driftline_average_precision_upper", "driftline_roc_auc_error_bound",
                 "driftline_average_precision_error_bound")
"""The ranking metrics' interval bounds and computation bounds, one each per (variant, version) group."""
ESTIMATED_RATES = ("recall", "precision", "fpr", "prevalence")
"""Label-free estimates exported per (model, window), each with both bounds, plus `trusted` and `contradicted`."""
MULTIVARIATE_SERIES = ("ratio", "reconstruction_error", "p_value", "drifted", "sample_rows")
"""driftline_multivariate_drift_<name>, one each per (model, window)."""

LABEL_COUNTERS = (
    ("driftline_label_corrections", "corrections", "Outcomes that changed the explicit label in force of a "
     "prediction id (a later outcome with another label; its counts moved). Implicit negatives overturned by a "
     "later outcome are driftline_implicit_negatives_relabelled_total, not counted here."),
    ("driftline_stale_outcomes", "stale_outcomes", "Outcomes older than the one in force for their prediction id "
     "(ignored: the newest outcome decides)."),
    ("driftline_implicit_negatives", "implicit_negatives", "Unlabelled predictions counted as negatives once mature "
     "(labels.implicit_negative_after)."),
    ("driftline_outcomes_before_prediction", "outcome_before_prediction", "Joins of an outcome stamped before its "
     "prediction (label counted, delay left out of the label-delay quantiles): a producer clock or ts field to check."),
)
"""(series, stored counter, help) of the label-arrival counters without labels; with
driftline_implicit_negatives_relabelled{label} they are the LABEL_SERIES of the pipeline."""
LABEL_SERIES = len(LABEL_COUNTERS) + 2
