"""Business KPIs of a report week, extrapolated to the configured monthly volume (seed 000's tables), and the
threshold trade-off table computed from the week's labelled score histograms.

Pure functions: the monthly numbers are analysis.costs.business_kpis of the week's recall, FPR and labelled
prevalence, exactly as seed 000 turns a sample's rates into a month of real traffic.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..analysis.cheapest import cheapest_exact, cheapest_on_grid
from ..analysis.costs import BusinessKPIs, Costs, business_kpis
from ..analysis.rates import rate
from ..domain import COSTS_NOT_CONFIGURED, Costs as CostConfig
from ..core.grids import SCORE_EDGES, score_edge_index
from ..metric_names import KPI_TARGETS

THRESHOLDS = tuple(round(0.1 * i, 1) for i in range(1, 10))
"""Thresholds of the trade-off table (exact edges of the score grid)."""



def analysis_costs(c: CostConfig) -> Costs:
    """Unit costs of the config as analysis.costs.Costs (the same mapping the A/B readout uses)."""
    return Costs(fn_cost=c.missed_positive, review_cost=c.review_per_flag, complaint_rate=c.complaint_rate,
                 complaint_cost=c.complaint_cost, model_cost_per_prediction=c.model_per_prediction)


def _kpis(cfg: CostConfig, prevalence: float, recall: float, fpr: float, costs: Costs | None = None) -> BusinessKPIs:
    return business_kpis(float(cfg.monthly_volume), prevalence, recall, fpr, costs or analysis_costs(cfg),
                         minutes_per_review=cfg.review_minutes)


def _clip(x: float) -> float:
    return min(1.0, max(0.0, x))


def baseline_kpis(cfg: CostConfig, prevalence: float) -> tuple[BusinessKPIs | None, list[str]]:
    """The configured baseline (e.g. the rules engine: flags and catches per month) at the week's prevalence.

    Its recall is caught ÷ monthly positives and its FPR (flagged − caught) ÷ monthly negatives; it has no
    model running cost. None when no baseline is configured.
    """
    if cfg.baseline_flagged is None or cfg.baseline_caught is None:
        return None, []
    notes: list[str] = []
    pos = cfg.monthly_volume * prevalence
    neg = cfg.monthly_volume - pos
    caught, flagged = float(cfg.baseline_caught), float(cfg.baseline_flagged)
    if caught > pos:
        notes.append(f"baseline catches {caught:,.0f} a month but the week's prevalence implies only {pos:,.0f} "
                     "positives: its recall is capped at 1")
    if caught > flagged:
        notes.append("baseline_caught exceeds baseline_flagged: false alarms set to 0")
    recall = _clip(caught / pos) if pos > 0 else 0.0
    fpr = _clip((flagged - min(caught, flagged)) / neg) if neg > 0 else 0.0
    costs = Costs(fn_cost=cfg.missed_positive, review_cost=cfg.review_per_flag, complaint_rate=cfg.complaint_rate,
                  complaint_cost=cfg.complaint_cost, model_cost_per_prediction=0.0)
    return _kpis(cfg, prevalence, recall, fpr, costs), notes


def business_section(metrics_doc: dict[str, Any], cfg: CostConfig | None,
                     targets: dict[str, float]) -> dict[str, Any]:
    """Monthly KPIs of the model (point, and a range from the recall/FPR intervals), the baseline and targets;
    not available (saying so) without a `costs:` section."""
    if cfg is None:
        return {"available": False, "costs_configured": False, "reason": COSTS_NOT_CONFIGURED}
    m = metrics_doc["metrics"]
    rec, fpr, prev = m["recall"], m["fpr"], m["prevalence"]
    base: dict[str, Any] = {"monthly_volume": cfg.monthly_volume, "currency": cfg.currency,
                            "review_minutes": cfg.review_minutes, "unit_costs": analysis_costs(cfg).to_json()}
    if rec["value"] is None or fpr["value"] is None or prev["value"] is None:
        return {**base, "available": False,
                "reason": "needs labelled positives and negatives in the week (recall, FPR and prevalence)"}
    p = float(prev["value"])
    point = _kpis(cfg, p, rec["value"], fpr["value"])
    # pessimistic: recall at its lower bound and FPR at its upper bound; optimistic the other way round
    worst = _kpis(cfg, p, rec["low"], fpr["high"])
    best = _kpis(cfg, p, rec["high"], fpr["low"])
    baseline, notes = baseline_kpis(cfg, p)
    doc: dict[str, Any] = {
        **base, "available": True, "prevalence": p, "recall": rec["value"], "fpr": fpr["value"],
        "model": point.to_json(), "pessimistic": worst.to_json(), "optimistic": best.to_json(),
        "baseline": None if baseline is None else {"name": cfg.baseline_name or "baseline", **baseline.to_json()},
        "notes": notes,
    }
    if baseline is not None:
        doc["versus_baseline"] = {
            "savings": baseline.total - point.total, "savings_low": baseline.total - worst.total,
            "savings_high": baseline.total - best.total,
            "review_hours_saved": baseline.review_hours - point.review_hours,
            "extra_caught": point.caught - baseline.caught,
            "complaints_avoided": baseline.complaints - point.complaints,
        }
    checks = []
    for key, field in KPI_TARGETS.items():
        if key in targets:
            value = getattr(point, field)
            checks.append({"kpi": field, "target_below": targets[key], "value": value,
                           "met": value < targets[key], "met_pessimistic": getattr(worst, field) < targets[key]})
    doc["targets"] = checks
    return doc


def cost_optimal_threshold(cfg: CostConfig) -> float | None:
    """C_FP / (C_FP + C_FN) with C_FP = review cost + complaint rate × complaint cost, C_FN = missed-positive cost.

    The expected-cost-minimising threshold for calibrated scores (flag when p·C_FN > (1 − p)·C_FP); None when
    both costs are 0.
    """
    c_fp = cfg.review_per_flag + cfg.complaint_rate * cfg.complaint_cost
    c_fn = cfg.missed_positive
    return c_fp / (c_fp + c_fn) if c_fp + c_fn > 0 else None


def threshold_row(neg_hist: np.ndarray, pos_hist: np.ndarray, threshold: float, cfg: CostConfig | None,
                  prevalence: float, pairs: tuple[np.ndarray, np.ndarray] | None = None) -> dict[str, Any]:
    """One row of the trade-off table: the week's labelled counts at `threshold` and their monthly KPIs at the
    configured volume and the week's prevalence. From `pairs` (every labelled prediction's score and label, when
    all are held) the counts are exact (grid_edge None); from the histograms they are those of the fine bins at
    or above the threshold's grid edge, which the row names (`grid_edge`)."""
    if pairs is not None:
        scores, labels = np.asarray(pairs[0], dtype=np.float64), np.asarray(pairs[1]).astype(bool)
        flag = scores >= threshold
        tp, fp = int((flag & labels).sum()), int((flag & ~labels).sum())
        return counts_row((tp, fp, int(labels.sum()) - tp, int((~labels).sum()) - fp), threshold, cfg, prevalence,
                          None)
    i = score_edge_index(threshold)
    tp, fn = int(pos_hist[i:].sum()), int(pos_hist[:i].sum())
    fp, tn = int(neg_hist[i:].sum()), int(neg_hist[:i].sum())
    return counts_row((tp, fp, fn, tn), threshold, cfg, prevalence, float(SCORE_EDGES[min(i, len(SCORE_EDGES) - 1)]))


def counts_row(counts: tuple[int, int, int, int], threshold: float, cfg: CostConfig | None, prevalence: float,
               grid_edge: float | None) -> dict[str, Any]:
    """A trade-off row from labelled (tp, fp, fn, tn) at `threshold`; `grid_edge` None when they are the exact
    counts the flags were made at (the deployed threshold's, from the week's confusion counts)."""
    tp, fp, fn, tn = counts
    recall, fpr, precision = rate(tp, tp + fn), rate(fp, fp + tn), rate(tp, tp + fp)
    row: dict[str, Any] = {"threshold": threshold, "grid_edge": grid_edge,
                           "counts": {"tp": tp, "fp": fp, "fn": fn, "tn": tn},
                           "recall": recall.to_json(), "fpr": fpr.to_json(), "precision_sample": precision.to_json()}
    if cfg is None or recall.value is None or fpr.value is None:
        row["monthly"] = None
        return row
    k = _kpis(cfg, prevalence, recall.value, fpr.value)
    row["monthly"] = {"precision": k.precision, "caught": k.caught, "flagged": k.flagged,
                      "false_alarms": k.false_positives, "complaints": k.complaints,
                      "review_hours": k.review_hours, "missed_cost": k.missed_cost, "review_cost": k.review_cost,
                      "complaint_cost": k.complaint_cost, "model_cost": k.model_cost, "total": k.total}
    return row


def threshold_table(neg_hist: np.ndarray, pos_hist: np.ndarray, cfg: CostConfig | None, prevalence: float | None,
                    deployed: float, thresholds: tuple[float, ...] = THRESHOLDS, configured: float | None = None,
                    deployed_counts: tuple[int, int, int, int] | None = None,
                    pairs: tuple[np.ndarray, np.ndarray] | None = None) -> dict[str, Any]:
    """Trade-off at thresholds 0.1 … 0.9 from the labelled score histograms, the cost-optimal threshold
    C_FP/(C_FP+C_FN) (with its own row) and the cheapest tabulated threshold, marked in-sample. Without a
    `costs:` section the rows hold recall, FPR and precision only (no monthly figures, no cheapest). `deployed` is
    the threshold the week's flags were made at (events may carry their own); `configured`, the config's, is marked
    too (row "configured") when it differs. A deployed threshold that is not tabulated gets a row of its own, in
    order, from `deployed_counts` (the week's labelled tp, fp, fn, tn, exact) when given (churn tryout: at 0.35 the
    table showed 0.1 … 0.9 and no row for the threshold in use). `pairs`: the week's held (score, label) pairs when
    every labelled prediction is held: the cost-optimal row is then counted exactly at its threshold and
    `cost_minimum`, the cheapest threshold of all, searched over every score; else both come from the fine grid,
    which they name (churn tryout: the row for 0.0385 was counted at the grid edge 0.0388, and nothing said so)."""
    optimal = None if cfg is None else cost_optimal_threshold(cfg)
    doc: dict[str, Any] = {"thresholds": list(thresholds), "deployed": deployed,
                           "configured": deployed if configured is None else configured,
                           "costs_configured": cfg is not None,
                           "monthly_volume": None if cfg is None else cfg.monthly_volume,
                           "currency": None if cfg is None else cfg.currency,
                           "cost_optimal": None if cfg is None else {
                               "threshold": optimal, "formula": "C_FP / (C_FP + C_FN)",
                               "c_fp": cfg.review_per_flag + cfg.complaint_rate * cfg.complaint_cost,
                               "c_fn": cfg.missed_positive,
                               "assumes": "calibrated scores (see the reliability diagram)"}}
    if cfg is None:
        doc["costs_note"] = COSTS_NOT_CONFIGURED
    if prevalence is None or int(pos_hist.sum()) == 0 or int(neg_hist.sum()) == 0:
        return {**doc, "available": False, "rows": [],
                "reason": "needs labelled positives and negatives in the week"}
    def at(t: float) -> dict[str, Any]:
        exact = deployed_counts is not None and abs(t - deployed) < 1e-9
        return counts_row(deployed_counts, t, cfg, prevalence, None) if exact else \
            threshold_row(neg_hist, pos_hist, t, cfg, prevalence)

    listed = list(thresholds)
    if 0.0 < deployed < 1.0 and not any(abs(t - deployed) < 1e-9 for t in listed):
        listed = sorted([*listed, deployed])
    rows = [at(t) for t in listed]
    priced = [r for r in rows if r["monthly"] is not None]
    cheapest = min(priced, key=lambda r: (r["monthly"]["total"], -r["threshold"])) if priced else None
    for r in rows:
        r["deployed"] = abs(r["threshold"] - deployed) < 1e-9
        r["configured"] = configured is not None and abs(r["threshold"] - configured) < 1e-9 and not r["deployed"]
        r["cheapest_in_sample"] = cheapest is not None and r is cheapest
    doc.update({"available": True, "prevalence": prevalence, "rows": rows,
                "cheapest": None if cheapest is None else {"threshold": cheapest["threshold"],
                                                           "total": cheapest["monthly"]["total"],
                                                           "in_sample": True},
                "cost_optimal_row": None if optimal is None else threshold_row(neg_hist, pos_hist, optimal, cfg,
                                                                                prevalence, pairs),
                "cost_minimum": None if cfg is None else cost_minimum(neg_hist, pos_hist, cfg, prevalence, pairs),
                "deployed_row": at(deployed)})
    return doc


def cost_minimum(neg_hist: np.ndarray, pos_hist: np.ndarray, cfg: CostConfig, prevalence: float,
                 pairs: tuple[np.ndarray, np.ndarray] | None) -> dict[str, Any] | None:
    """The cheapest threshold of all on the week's labels (analysis.cheapest: exact over `pairs`, else the best
    score-grid edge with the grid's step there), with its trade-off row; in-sample, as the tabulated cheapest."""
    found = (cheapest_exact(*pairs, float(cfg.monthly_volume), prevalence, analysis_costs(cfg)) if pairs is not None
             else cheapest_on_grid(neg_hist, pos_hist, float(cfg.monthly_volume), prevalence, analysis_costs(cfg)))
    if found is None:
        return None
    row = counts_row(found.counts, found.threshold, cfg, prevalence, None if found.exact else found.threshold)
    return {**row, **found.to_json()}


def judge_cost_optimal(thresholds: dict[str, Any], calibration: dict[str, Any]) -> dict[str, Any] | None:
    """Whether the cost-optimal threshold C_FP/(C_FP+C_FN) may be recommended: it assumes calibrated scores, so
    it is not usable when the week's ECE (equal-width bins) exceeds its noise floor; and it is never recommended
    silently when, on this week's labels, it costs more a month than the deployed threshold.

    Returns {"usable", "miscalibrated", "ece", "floor", "costs_more", "extra_cost"} (None without a cost-optimal
    threshold); a pure function of the report's thresholds and calibration sections."""
    co = thresholds.get("cost_optimal")
    if not co or co.get("threshold") is None:
        return None
    floor = {}
    if calibration.get("available"):
        floor = calibration["document"]["calibration"]["noise_floor"].get("width") or {}
    miscalibrated = floor.get("beyond_floor") is True
    at, dep = thresholds.get("cost_optimal_row") or {}, thresholds.get("deployed_row") or {}
    extra = None
    if at.get("monthly") and dep.get("monthly"):
        extra = at["monthly"]["total"] - dep["monthly"]["total"]
    costs_more = extra is not None and extra > 0
    return {"usable": not miscalibrated and not costs_more, "miscalibrated": miscalibrated,
            "ece": floor.get("ece"), "floor": floor.get("p95"), "costs_more": costs_more, "extra_cost": extra}
