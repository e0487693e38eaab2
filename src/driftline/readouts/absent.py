"""Why a per-(model, window) readout the exporter publishes is absent: a fixed set of codes, so the exporter's
driftline_readout_unavailable{reason} stays bounded and a dashboard can say why a panel is empty (as the CLI does)."""

from __future__ import annotations

from typing import Any

ESTIMATED, MULTIVARIATE = "estimated", "multivariate"
READOUTS = (ESTIMATED, MULTIVARIATE)
"""`readout` label values: the label-free estimates (driftline_estimated_*) and multivariate drift."""
REASONS = {
    "no_reference": "no active drift reference: run `driftline reference set`",
    "reference_predates_labels": "the active reference was set by a driftline that kept no labelled scores (before "
                                 "calibrated estimates): set it again (`driftline reference set`)",
    "no_reference_labels": "the active reference has no labelled scores of both classes to calibrate on: set it "
                           "over a labelled range",
    "reference_predates_samples": "the active reference has no feature sample (set before multivariate drift): "
                                  "set it again over a range stored since the upgrade",
    "reference_unsampled": "the active reference's predictions were stored by a driftline from before multivariate "
                           "drift (no feature samples): set it again over a range stored since the upgrade",
    "window_unsampled": "the window's predictions were stored by a driftline from before multivariate drift (no "
                        "feature samples): it fills up as the window moves past the upgrade",
    "too_few_sampled_rows": "fewer than 50 sampled feature vectors in the window or in a half of the reference "
                            "sample: wait for traffic or use a longer window",
    "no_predictions": "no predictions in the window",
}
"""Every `reason` label value, with its words (README, docs/METRICS.md and the dashboards name the same)."""


def estimated_absence(block: dict[str, Any] | None) -> str | None:
    """Why the label-free estimates of a window are absent (the `calibrated` block, None without a reference);
    None when at least one estimate is exported."""
    if block is None:
        return "no_reference"
    if any(block[name]["value"] is not None for name in ("recall", "precision", "fpr", "prevalence")):
        return None
    for code in ("no_reference", "reference_predates_labels", "no_reference_labels"):
        if code in block["reasons"]:
            return code
    return "no_reference_labels" if block["calibration"] is None else "no_predictions"
