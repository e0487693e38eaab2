"""The A/B readout (`driftline ab --json`): arms, treatment − control comparisons, health checks, power.

Assembles the pure statistics of analysis/abstats, paired, sequential, power and costs over one window
of stored buckets (grouped by variant) and, in shadow mode, over the prediction pairs joined by
prediction_id in the `predictions` join table. No printing; the verdict text is in ab_verdict.

JSON contract (stable; extra fields may be added):
{"design": "split"|"shadow", "control": "A", "window": {...},
 "arms": {"A": {"predictions", "labelled", "positives", "recall", "fpr", "precision", "alert_rate",
                "label_coverage": each {"value", "low", "high", "n"}, "cost_per_1000": {"value", "low", "high"},
                "label_delay_seconds": {"p50", "p95"},
                "matured": null | {"predictions", "labelled", "positives", "negatives", "counts"}}, ...},
 "comparisons": [{"treatment": "B", "metrics": {"recall", "fpr", "precision", "alert_rate": each
                  {"diff", "low", "high", "p_value", "p_holm", "rel_lift": {"value", "low", "high"},
                   "seq_low", "seq_high", "counts": {...}}},
                  "cost_per_1000": {"diff", "low", "high"}, "paired": {..., "matured"} (shadow only),
                  "independent_intervals": {"metrics", "conservative", "text"} (shadow only)}],
 "srm": {"chi2", "p_value", "mismatch"}, "label_balance": {...}, "power": {...}, "verdict": "..."}

Always-valid intervals are tuned by `ab.planned_positives` (labelled positives per arm); for the other
metrics the plan is converted to their units with the window's pooled ratio n_metric / positives (for
FPR this is SequentialPlan.for_negatives at the pooled prevalence). They are valid over repeated looks
when the window starts at the start of the experiment.

Under `labels.policy: implicit_negative_after`, over a window reaching into the maturity period, FPR and precision
(per arm, their differences and plans) and the costs' miss share and precision come from the window's matured part
(matured_part: the boundary of `metrics`), each arm's counts of it in `matured`, and in shadow mode the paired FPR
test and the paired precision and cost intervals the pairs made before it (`paired.matured`); recall (paired too),
alert rate, label coverage, label balance and power stay the whole window's (analysis.matured says why).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from .ab_shadow import ALPHA, independent_intervals, paired_readout, shadow_pairs
from .ab_sequential import cost_sequential, seq_plan, sequential_more_needed
from .ab_verdict import verdict
from .ab_delay import arm_pipeline, delay_basis, delay_span, seen_age
from ..analysis.abstats import HEADLINE_METRICS, ArmCounts, arm_metrics, compare_arms, holm, srm_check
from ..analysis.label_balance import label_balance
from ..analysis.classification import delay_quantiles
from ..analysis.costs import Costs, cost_difference, cost_per_1000
from ..analysis.flag_thresholds import flag_note
from ..analysis.label_pipeline import LabelPipeline, days_until
from ..analysis.power import POWER, recall_power
from ..analysis.sequential import SequentialPlan, cs_difference
from ..config import AB, Config
from ..config_checks import old_shadow_shares
from ..config_fields import closest_name
from ..config import Costs as CostConfig
from ..core.grids import DELAY_EDGES
from .matured_part import matured_split, maturing
from .maturity import maturity_hint
from .metrics import resolve_window
from ..core.stats import NEG, UNL, BucketStats, merge
from ..storage.bucket_row import BucketRow
from ..storage.scores import positive_delay_hist
from ..storage.store import Store
from .windows import Window, flags_in_force, merged, window_ending, window_rows



@dataclass(frozen=True, slots=True)
class ABQuery:
    """Which window an A/B readout covers, and the seed and size of the paired bootstrap."""

    model: str | None
    window_s: float
    at: float | None = None
    seed: int = 0
    n_boot: int = 2000


@dataclass(frozen=True, slots=True)
class ArmPlan:
    """The arms compared: expected share per variant (normalised), the control, and notes on the choice."""

    shares: Mapping[str, float]
    control: str
    notes: tuple[str, ...] = ()

    @property
    def treatments(self) -> list[str]:
        return sorted(a for a in self.shares if a != self.control)


def costs_from_config(c: CostConfig | None) -> Costs:
    """The analysis Costs of the config's `costs` section (complaint cost = rate × cost per false positive);
    all zero without the section (the readout then shows no cost: see ab_document)."""
    if c is None:
        return Costs()
    return Costs(fn_cost=c.missed_positive, review_cost=c.review_per_flag, complaint_rate=c.complaint_rate,
                 complaint_cost=c.complaint_cost, model_cost_per_prediction=c.model_per_prediction)


def plan_arms(ab: AB, found: Iterable[str]) -> ArmPlan:
    """Configured arms and control; without configured arms (then no control is configured either: refused at
    load), the variants found with equal shares and 'A' as control when present, else the alphabetically first."""
    variants = sorted(set(found))
    if ab.arms:  # the control is an arm and the shares sum to 1 (shadow: or are fractions scored): config_checks
        total = float(sum(ab.arms.values()))
        notes = tuple(f"variant {v!r} has predictions in the window but is not a configured arm: ignored"
                      + _arm_hint(v, [a for a in ab.arms if a not in variants]) for v in variants if v not in ab.arms)
        if ab.design == "shadow" and not old_shadow_shares(dict(ab.arms), ab.control_arm):  # fractions scored
            return ArmPlan(dict(ab.arms), ab.control_arm, notes)
        return ArmPlan({a: w / total for a, w in ab.arms.items()}, ab.control_arm, notes)
    if not variants:
        return ArmPlan({}, ab.control_arm)
    control = ab.control_arm if ab.control_arm in variants else variants[0]
    notes = () if control == ab.control_arm else (
        f"no arms configured and default control {ab.control_arm!r} has no predictions in the window; "
        f"using {control!r}",)
    return ArmPlan({a: 1.0 / len(variants) for a in variants}, control, notes)


def _arm_hint(variant: str, empty_arms: list[str]) -> str:
    """'; configured arm 'Candidate' has none: …' when an ignored variant is close to an arm without predictions
    (tryout: `ab.arms` spelt `Candidate` for the events' `candidate` read as a 0-prediction arm and an SRM
    MISMATCH, the note naming no cause)."""
    same_case = [a for a in empty_arms if a.casefold() == variant.casefold()]
    near = same_case[0] if same_case else closest_name(variant, empty_arms)
    if near is None:
        return ""
    return (f"; configured arm {near!r} has no predictions in the window: a misspelt `ab.arms` key? (names are "
            f"exact, case included)")


# --- assembly --------------------------------------------------------------------------------------------
def _span_days(rows: list[BucketRow], window: Window) -> float:
    """Days of the window that hold data: from the first stored bucket (or window start) to the end."""
    if not rows:
        return window.seconds / 86400.0
    first = max(window.start, float(min(r.bucket_start for r in rows)))
    return max(window.end - first, 1.0) / 86400.0


def arm_readout(stats: BucketStats, costs: Costs, cost_cfg: CostConfig | None, share: float,
                c: ArmCounts | None = None) -> dict[str, Any]:
    """One arm: counts, Wilson rates, label coverage and delay, cost per 1,000 and per month (None for both
    without a `costs:` section); `c` the arm's counts (with their matured part: FPR, precision, the cost's miss
    share and precision read it), by default the stats' own."""
    c = ArmCounts.from_conf(stats.conf) if c is None else c
    doc: dict[str, Any] = arm_metrics(c, ALPHA).to_json()
    doc["matured"] = None if c.matured is None else {
        "predictions": c.matured.predictions, "labelled": c.matured.labelled, "positives": c.matured.positives,
        "negatives": c.matured.negatives, "counts": c.matured.to_json()}
    if cost_cfg is None:
        doc.update({"expected_share": share, "counts": c.to_json(), "cost_per_1000": None,
                    "label_delay_seconds": delay_quantiles(stats.delay), "monthly": None})
        return doc
    cost = cost_per_1000(c.for_costs, costs, ALPHA)
    scale = cost_cfg.monthly_volume / 1000.0
    alert = doc["alert_rate"]
    hours = cost_cfg.monthly_volume * cost_cfg.review_minutes / 60.0
    doc.update({
        "expected_share": share,
        "counts": c.to_json(),
        "cost_per_1000": cost.to_json(),
        "label_delay_seconds": delay_quantiles(stats.delay),
        "monthly": {
            "volume": cost_cfg.monthly_volume, "currency": cost_cfg.currency,
            "cost": {k: None if cost.value is None else v * scale
                     for k, v in (("value", cost.value), ("low", cost.low), ("high", cost.high))},
            "review_hours": {k: None if alert[k] is None else alert[k] * hours for k in ("value", "low", "high")},
        },
    })
    return doc


def comparison_readout(treatment: str, control: str, t: ArmCounts, c: ArmCounts, st: BucketStats,
                       sc: BucketStats, config: Config, days: float,
                       pipes: tuple[LabelPipeline | None, LabelPipeline | None] = (None, None)) -> dict[str, Any]:
    """Treatment − control: four headline metrics (Newcombe, score p, Holm, lift, always-valid interval),
    cost difference (MOVER on the arms' mid-p score intervals: analysis/cost_interval), label balance and
    recall power (its days from the arms' label pipelines `pipes`, control's and treatment's, when both are
    known: label delay and the predictions waiting for labels count)."""
    comp = compare_arms(t, c, ALPHA, names=(treatment, control))
    metrics: dict[str, Any] = {}
    for m in HEADLINE_METRICS:
        pc = comp.metrics[m]
        plan = seq_plan(config.ab, m, t, c)
        seq = cs_difference(pc.k_t, pc.n_t, pc.k_c, pc.n_c, plan)
        entry = pc.to_json()
        entry.update({"seq_low": seq.low, "seq_high": seq.high, "seq_t": seq.t,
                      "seq_planned_per_arm": plan.planned_per_arm,
                      "fixed_excludes_zero": pc.significant, "seq_excludes_zero": seq.excludes_zero,
                      "seq_more_needed": sequential_more_needed(pc.k_t, pc.n_t, pc.k_c, pc.n_c, plan)})
        metrics[m] = entry
    costs = costs_from_config(config.costs)
    cd = cost_difference(t.for_costs, c.for_costs, costs, ALPHA)
    cost_seq = cost_sequential(cd.diff, cd.se, t, c, config.ab)
    lb = label_balance(t, c, names=(treatment, control), delay_t=st.delay, delay_c=sc.delay,
                       delay_edges=DELAY_EDGES)
    per_day = min(t.positives, c.positives) / days if days > 0 else None
    rates = (c.positives / days, t.positives / days) if days > 0 else None
    pc, pt = pipes
    curves = None if pc is None or pt is None else (pc.expected, pt.expected)
    pw = recall_power(c.tp, c.positives, t.positives, config.ab.target_recall_diff, per_day, arm_rates=rates,
                      curves=curves)
    if pc is not None and pt is not None:
        more = metrics["recall"]["seq_more_needed"]
        ahead = None if not more else days_until(c.positives + t.positives + more, (pc, pt))
        metrics["recall"]["seq_more_days"] = None if ahead is None else math.ceil(ahead)
    return {"treatment": treatment, "control": control, "metrics": metrics,
            "cost_per_1000": None if config.costs is None else {**cd.to_json(), "method": "mid_p_mover", **cost_seq},
            "label_balance": lb.to_json(),
            "power": {**pw.to_json(), "positives_per_arm_per_day": per_day,
                      "positives_per_day": (t.positives + c.positives) / days if days > 0 else None,
                      "label_delay": None if pc is None or pt is None else delay_basis(pc, pt, control, treatment)}}


def arm_pipelines(store: Store, config: Config, model: str | None, window: Window,
                  by_variant: dict[str, list[BucketRow]], stats: dict[str, BucketStats],
                  counts: dict[str, ArmCounts], days: float, labels_as_of: float | None
                  ) -> dict[str, LabelPipeline | None]:
    """Each arm's label pipeline (ab_delay.arm_pipeline), its label delays from the arm's buckets over the label
    horizon ending at the newest stored event (ab_delay.delay_span), or the window's when it has none there."""
    span = delay_span(window, labels_as_of, config.labels.horizon_s, config.bucket_s)
    in_span: dict[str, list[BucketRow]] = {}
    for r in [] if span is None else window_rows(store, model, span, features=False):
        in_span.setdefault(r.variant, []).append(r)
    out: dict[str, LabelPipeline | None] = {}
    for a, st in stats.items():
        sample = in_span.get(a, [])
        if span is None or labels_as_of is None or not sample:
            delays = positives_delays(store, model, window, a, st, counts[a].positives)
            out[a] = arm_pipeline(by_variant.get(a, []), counts[a].positives, st, window, config.bucket_s, days,
                                  delays, labels_as_of)
            continue
        s_st = merged(sample)
        delays = positives_delays(store, model, span, a, s_st, ArmCounts.from_conf(s_st.conf).positives)
        out[a] = arm_pipeline(by_variant.get(a, []), counts[a].positives, st, window, config.bucket_s, days, delays,
                              labels_as_of, sample, seen_age(sample, span, labels_as_of, config.bucket_s))
    return out


def positives_delays(store: Store, model: str | None, window: Window, arm: str, stats: BucketStats,
                     positives: int) -> np.ndarray | None:
    """The arm's positives' label-delay histogram over `window` (the delay span: ab_delay.delay_span): the buckets'
    own when every labelled negative is an implicit one (no outcome, no delay: the histogram holds the positives
    alone), else read from the join state (a scan of the span's held predictions: ~0.6 s an arm for 700,000 on
    SQLite), None when not all are held."""
    if int(stats.conf[NEG].sum()) == stats.implicit:
        return stats.delay
    return positive_delay_hist(store, model, window.start, window.end, arm, positives)


def holm_across_treatments(comparisons: list[dict[str, Any]]) -> None:
    """With several treatments, one Holm family over every treatment's headline metrics (and one over every
    treatment's paired recall/FPR McNemar tests), in place: Holm within each comparison alone let 3 A/A
    treatments against one control show some Holm p < 0.05 in 11.6 % of experiments (4.0 % with one family)."""
    if len(comparisons) < 2:
        return
    cells = [comp["metrics"][m] for comp in comparisons for m in HEADLINE_METRICS]
    for cell, p in zip(cells, holm([c["p_value"] for c in cells])):
        cell["p_holm"] = p
    paired = [comp["paired"][m] for comp in comparisons if comp.get("paired") for m in ("recall", "fpr")]
    for cell, p in zip(paired, holm([c["p_value"] for c in paired])):
        cell["p_holm"] = p
    for comp in comparisons:
        comp["holm_treatments"] = [c["treatment"] for c in comparisons]


DESIGN_WORDS = {"split": "split test (one arm per prediction)", "shadow": "shadow test (every arm scores each prediction)"}


def design_text(design: str, control: str | None) -> str:
    """The readout's header words, whatever the variants are called: "split test (…), control arm 'x'"."""
    words = DESIGN_WORDS.get(design, f"{design} test")
    return words if control is None else f"{words}, control arm {control!r}"


MATURED_WORDS = ("each arm's FPR and precision, their differences, intervals and always-valid plans, and the costs "
                 "(shadow mode: the paired FPR test, the paired precision and cost intervals and whether labels "
                 "follow the control's flags, over the pairs made before the boundary; recall, alert rate, label "
                 "coverage, label balance, power and the paired recall test and interval: the whole window's "
                 "labelled predictions)")
"""What `ab` reads over the matured part of a window (matured_split's note)."""


def _empty_doc(config: Config, q: ABQuery, window: Window, plan: ArmPlan) -> dict[str, Any]:
    return {"design": config.ab.design, "control": plan.control, "model": q.model, "window": window.to_json(),
            "design_text": design_text(config.ab.design, plan.control),
            "arms": {}, "comparisons": [], "srm": {"chi2": None, "p_value": None, "mismatch": False},
            "label_balance": {}, "power": {}, "notes": list(plan.notes), "label_maturity": None}


def ab_document(store: Store, config: Config, q: ABQuery) -> dict[str, Any]:
    """`driftline ab --json`: the whole A/B readout of one window (see the module doc for the contract)."""
    window = resolve_window(store, config, q.model, q.window_s, q.at)
    rows = [] if window is None else window_rows(store, q.model, window)
    stored = window is not None
    if window is None:  # nothing stored yet: an empty window, reported with null bounds (as `metrics` does)
        window = window_ending(0.0, q.window_s, config.bucket_s)
    by_variant: dict[str, list[BucketRow]] = {}
    for r in rows:
        by_variant.setdefault(r.variant, []).append(r)
    plan = plan_arms(config.ab, by_variant)
    doc = _empty_doc(config, q, window, plan)
    if not stored:
        doc["window"].update(start=None, end=None)
        doc["notes"].append("no predictions stored yet: feed events with `driftline replay` or `driftline run`")
    days = _span_days(rows, window)
    doc["window"]["days_observed"] = days
    mat = maturing(store, config)
    old_rows, young = matured_split(rows, mat, MATURED_WORDS)
    if young:
        doc["notes"].append(young)
    currency = None if config.costs is None else config.costs.currency
    flags = flags_in_force(rows, config.threshold)  # what the arms' flags were made at
    doc.update({"alpha": ALPHA, "threshold": flags.value, "threshold_in_force": flags.to_json(),
                "config_threshold": config.threshold, "currency": currency,
                "costs_configured": config.costs is not None,
                "planned_positives": config.ab.planned_positives,
                "target_recall_diff": config.ab.target_recall_diff,
                "sequential": {**SequentialPlan(float(config.ab.planned_positives), ALPHA).to_json(),
                               "valid_when": "the window starts when the experiment started"}})
    if flag_note(doc["threshold_in_force"]):
        doc["notes"].append(flag_note(doc["threshold_in_force"]))
    if not plan.shares:
        doc["verdict"] = verdict(doc)
        return doc
    stats = {a: merged(by_variant.get(a, [])) for a in plan.shares}
    counts = {a: ArmCounts.from_conf(s.conf) for a, s in stats.items()}
    if old_rows is not None and mat is not None:  # the same boundary as `metrics`: matured_part.Maturing.rows
        counts = {a: dataclasses.replace(c, matured=ArmCounts.from_conf(merged(mat.rows(by_variant.get(a, []))).conf))
                  for a, c in counts.items()}
    costs = costs_from_config(config.costs)
    for a in sorted(plan.shares):
        doc["arms"][a] = arm_readout(stats[a], costs, config.costs, plan.shares[a], counts[a])
        doc["arms"][a]["model_versions"] = sorted({r.model_version for r in by_variant.get(a, [])})
        doc["arms"][a]["threshold_in_force"] = flags_in_force(by_variant.get(a, []), config.threshold).to_json()
    shadow = config.ab.design == "shadow"
    srm_split = dict(plan.shares)  # shadow: the fractions of the predictions each arm scores
    if shadow and old_shadow_shares(dict(config.ab.arms), plan.control):  # the old form: every arm scores all
        srm_split = {a: 1.0 for a in plan.shares}
    srm = srm_check({a: c.predictions for a, c in counts.items()}, srm_split)
    doc["srm"] = {**srm.to_json(), "design": config.ab.design}
    ctl = plan.control
    labels_as_of = store.newest_event()  # labels are the ones known now, also for a window ending at --at
    pipelines = arm_pipelines(store, config, q.model, window, by_variant, stats, counts, days, labels_as_of)
    for tr in plan.treatments:
        pipes = (pipelines[ctl], pipelines[tr])
        comp = comparison_readout(tr, ctl, counts[tr], counts[ctl], stats[tr], stats[ctl], config, days,
                                  pipes)  # type: ignore[arg-type]
        if shadow:
            pairs = shadow_pairs(store, q.model, window, ctl, tr,
                                 mat.before if old_rows is not None and mat is not None else None)
            comp["paired"] = paired_readout(pairs, costs, q.seed, q.n_boot)
            boot_cost = comp["paired"]["bootstrap"]["cost_per_1000"]
            if config.costs is None:
                comp["paired"]["bootstrap"]["cost_per_1000"] = None
            elif pairs.table.n > 0:
                indep = comp["cost_per_1000"]  # the always-valid interval stays the unpaired (conservative) one
                comp["cost_per_1000"] = {"diff": boot_cost["diff"], "low": boot_cost["low"],
                                         "high": boot_cost["high"], "method": "paired_bootstrap",
                                         "seq_low": indep["seq_low"], "seq_high": indep["seq_high"],
                                         "seq_excludes_zero": indep["seq_excludes_zero"],
                                         "delta_independent": indep}
            if pairs.table.n == 0:  # nothing joined (e.g. join state past the label horizon): independent estimate
                doc["notes"].append(f"no ids scored by both {ctl} and {tr} in the window's join state")
            comp["independent_intervals"] = independent_intervals(comp)
        doc["comparisons"].append(comp)
    holm_across_treatments(doc["comparisons"])
    if doc["comparisons"]:
        first = doc["comparisons"][0]
        doc["label_balance"] = {"treatment": first["treatment"], **first["label_balance"]}
        doc["power"] = {"treatment": first["treatment"], "target_recall_diff": config.ab.target_recall_diff,
                        "alpha": ALPHA, "power": POWER, **first["power"]}
    total = merge(stats.values())
    doc["label_maturity"] = maturity_hint(store, config, q.model, window, total.predictions,
                                          total.predictions - int(total.conf[UNL].sum()), "ab")
    doc["verdict"] = verdict(doc)
    return doc
