"""The weekly report document: every section assembled from the same functions the CLI uses.

headline = `driftline metrics --json` of the ISO week (with targets and trigger judgements), trends = the same
per day, drift/calibration/slices = `driftline drift/calibration/slices --json` of the week, A/B = `driftline ab
--json`, alerts = the trigger history; business KPIs and the threshold table are analysis.costs applied to the
week's rates and labelled score histograms. A section whose source is missing (no reference profile, module
not installed) says "not available" with the reason instead of failing the report.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import msgspec
import numpy as np

from .. import numbers
from ..core.limits import MAX_FUTURE_S
from ..readouts.ab import ABQuery, ab_document
from ..config import Config
from ..readouts.maturity import method_text
from ..readouts.metrics import MetricsQuery, metrics_document
from ..core.stats import NEG, POS, UNL
from ..storage.store import Store
from ..triggers import history
from ..triggers.runner import group_stats
from ..readouts.windows import iso, window_rows
from .maturity import basis_text, provisional_note
from .render import when
from .headline import headline, trigger_judgements
from .business import business_section, judge_cost_optimal, threshold_table
from .scores import fine_from_sample, score_distribution
from .summary import glossary, summary_sentence, summary_status, week_phrase
from .weeks import IsoWeek, has_data, reported_part, week_of

log = logging.getLogger(__name__)

REPORT_VERSION = 1
DAY_S = 86400.0
WEEK_S = 7 * DAY_S


def _not_available(reason: str) -> dict[str, Any]:
    return {"available": False, "reason": reason}


def guarded(name: str, fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run one optional section; its failure (missing reference, missing module, error) becomes a reason."""
    try:
        return {"available": True, **fn()}
    except ImportError as err:
        return _not_available(f"{name} module not installed ({err.name or err})")
    except Exception as err:  # noqa: BLE001 - one broken section must not lose the whole report
        if type(err).__name__ not in ("NoReference", "ReferenceProblem"):
            log.exception("report section %s failed", name)
        return _not_available(str(err) or type(err).__name__)


# --- trends and label maturity --------------------------------------------------------------------------------
def _rates(doc: dict[str, Any]) -> dict[str, Any]:
    m = doc["metrics"]
    return {"recall": m["recall"], "fpr": m["fpr"], "precision": m["precision"], "alert_rate": m["alert_rate"],
            "label_coverage": doc["label_coverage"]}


def daily(store: Store, config: Config, model: str, week: IsoWeek) -> list[dict[str, Any]]:
    """`metrics --json --window 1d --at <day end>` for each day of the week (read up to its cut)."""
    out = []
    for day, start, end in week.days():
        doc = metrics_document(store, config, MetricsQuery(model, end - start, at=end))
        out.append({"date": day, "window": doc["window"], "counts": doc["counts"], **_rates(doc),
                    "label_delay_seconds": doc["label_delay_seconds"]})
    return out


def watermark(store: Store) -> float | None:
    """Newest event time stored (prediction or outcome): how far the labels have had time to arrive; never past
    the store's clock when the data ends at most a day ahead of it (SRE tryout: one prediction stamped 22 h ahead,
    which ingestion accepts, marked a day's labels settled a day early), as the default windows are cut."""
    newest = store.newest_event()
    if newest is None:
        return None
    now = float(store.clock())
    return now if now < newest <= now + MAX_FUTURE_S else newest


def newest_matured_week(store: Store, model: str, week: IsoWeek, period: float | None, wm: float | None
                        ) -> IsoWeek | None:
    """The newest ISO week before `week` whose every day has matured (its end one maturity period before the
    watermark) and which holds predictions, or None (churn tryout: with labels 30–60 d late every scheduled weekly
    report read "no labelled outcomes for this week" and named no week that could be judged)."""
    if period is None or wm is None:
        return None
    matured = week_of(wm - period).previous()
    return matured if matured.start < week.start and has_data(store, model, matured) else None


def label_maturity(store: Store, config: Config, model: str, week: IsoWeek, metrics: dict[str, Any],
                   days: list[dict[str, Any]], now: float) -> dict[str, Any]:
    """Label coverage of the week (and per day), label delay, and whether each day's labels have matured:
    a day is provisional until the event-time watermark is one maturity period (`driftline calibration`'s
    label-delay p95, or implicit_negative_after) past its end; the week also while it has not ended at `now`."""
    try:
        from ..readouts.drift import maturity_period

        period, method = maturity_period(store, config, model, week.window)
    except ImportError:
        period, method = None, "unavailable"
    wm = watermark(store)
    by_day = []
    for d in days:
        end = week.start + (len(by_day) + 1) * DAY_S
        matured_at = None if period is None else end + period
        prov = True if (wm is None or matured_at is None) else wm < matured_at
        by_day.append({"date": d["date"], "predictions": d["counts"]["predictions"],
                       "labelled": d["counts"]["labelled"], "coverage": d["label_coverage"],
                       "matures_at": None if matured_at is None else iso(matured_at), "provisional": prov})
    pending = any(d["provisional"] for d in by_day if d["predictions"])
    provisional = pending or now < week.end
    week_p95 = metrics["label_delay_seconds"]["p95"]
    note = provisional_note(by_day, period, now >= week.end, when(iso(week.end)))
    matured = newest_matured_week(store, model, week, period, wm) if pending else None
    if matured is not None:
        note += (f"; the newest week whose labels have matured is {matured.label}: `driftline report --week "
                 f"{matured.label}`")
    return {"coverage": metrics["label_coverage"], "delay_seconds": metrics["label_delay_seconds"],
            "matured_week": None if matured is None else matured.label,
            "maturity_seconds": period, "maturity_method": method,
            "maturity_method_text": method_text(method),
            "maturity_basis": basis_text(config, method, period, week_p95, pending), "watermark": None if wm is None else iso(wm),
            "by_day": by_day, "provisional": provisional, "note": note}


# --- optional sections (drift readouts) -------------------------------------------------------------------------
def drift_section(store: Store, config: Config, model: str, week: IsoWeek) -> dict[str, Any]:
    """`driftline drift --json` of the week, or not available (e.g. no reference set)."""
    def build() -> dict[str, Any]:
        from ..readouts.drift import drift_document

        return {"document": drift_document(store, config, model, week.window)}
    return guarded("drift", build)


def calibration_section(store: Store, config: Config, model: str, week: IsoWeek) -> dict[str, Any]:
    """`driftline calibration --json` of the week."""
    def build() -> dict[str, Any]:
        from ..readouts.drift import calibration_document

        return {"document": calibration_document(store, config, model, week.window)}
    return guarded("calibration", build)


def slices_section(store: Store, config: Config, model: str, week: IsoWeek) -> dict[str, Any]:
    """`driftline slices --json` of the week."""
    def build() -> dict[str, Any]:
        from ..readouts.slices import slices_document

        return {"document": slices_document(store, config, model, week.window)}
    return guarded("slices", build)


def ab_section(store: Store, config: Config, model: str, week: IsoWeek) -> dict[str, Any]:
    """`driftline ab --json --window 7d --at <week end>` (the part of the week read, when cut)."""
    query = ABQuery(model, week.window.seconds, at=week.until)
    return guarded("A/B", lambda: {"document": ab_document(store, config, query)})


def reference_scores(store: Store, model: str, drift: dict[str, Any]) -> dict[str, Any] | None:
    """The fine score histogram of the reference the drift section compared against (None without one)."""
    if not drift.get("available"):
        return None
    ref_id = drift["document"]["reference"]["id"]
    from ..readouts.references import load_reference

    ref = load_reference(store, model, ref_id)
    score = None if ref is None else ref.profile().score
    if score is None:
        return None
    return {"id": ref_id, "hist": fine_from_sample(score.fine.idx, score.fine.counts), "other": score.fine.other,
            "missing": score.fine.missing}


def _drift_provider() -> Any:
    try:
        from ..readouts.drift import drift_readings

        return drift_readings
    except ImportError:
        from ..triggers.drift_hook import default_provider

        return default_provider()


def _deployed(metrics: dict[str, Any]) -> float:
    """The threshold the week's flags were made at, or the config's when they were mixed (no single one)."""
    return metrics["threshold"] if metrics["threshold"] is not None else metrics["config_threshold"]


def _deployed_counts(metrics: dict[str, Any]) -> tuple[int, int, int, int] | None:
    """The week's labelled (tp, fp, fn, tn) at the threshold its flags were made at; None when it was mixed."""
    if metrics["threshold"] is None:
        return None
    c = metrics["counts"]
    return c["tp"], c["fp"], c["fn"], c["tn"]


def flag_rule(flags: dict[str, Any]) -> str:
    """Who is flagged, for the report's first lines: 'scoring 0.7 or more (the events' own threshold; …)'."""
    cfg = f"{flags['configured']:g}"
    if flags["source"] == "config":
        return f"scoring {cfg} or more"
    if flags["value"] is not None:
        if flags.get("from_events") is False:  # recorded at ingest from a config since changed
            return f"scoring {flags['value']:g} or more (the config's threshold when ingested; today's is {cfg})"
        return f"scoring {flags['value']:g} or more (the events' own threshold; the config's is {cfg})"
    seen = flags["thresholds"]
    which = ", ".join(f"{t:g}" for t in seen) if seen else "thresholds that varied within an hour"
    return f"scoring at or above the threshold each event carried (mixed: {which}; the config's is {cfg})"


def mark_in_force(rows: list[dict[str, Any]], flags: dict[str, Any]) -> None:
    """Each trade-off row's `in_force` (the week's flags were made at it, for all or, when mixed, part of the week)
    and `mark`, the words the report prints beside it: 'deployed' when that is the config's threshold, else which
    is in force and which is only configured."""
    seen = flags["thresholds"] or []
    for r in rows:
        at = lambda t: abs(r["threshold"] - t) < 1e-9  # noqa: E731
        r["in_force"] = any(at(t) for t in seen)
        if flags["source"] == "config":
            r["mark"] = "deployed" if r["in_force"] else ""
        elif not flags["mixed"]:
            whose = "config’s when ingested" if flags.get("from_events") is False else "events’ own"
            r["mark"] = (f"in force ({whose} threshold)" if r["in_force"] else
                         "config threshold (not in force)" if at(flags["configured"]) else "")
        else:
            words = ["in force for part of the week (mixed)"] if r["in_force"] else []
            if at(flags["configured"]):
                words.append("config threshold" + ("" if r["in_force"] or seen else " (thresholds mixed)"))
            r["mark"] = ", ".join(words)


def _held_pairs(store: Store, config: Config, model: str, week: IsoWeek, rows: Any, total: Any
                ) -> tuple[np.ndarray, np.ndarray] | None:
    """The week's (score, label) pairs of the headline's predictions (shadow mode: the production arm's) when every
    labelled one is still held, so the threshold table prices thresholds exactly; None without `costs:`."""
    from ..readouts.ranking import held_pairs
    if config.costs is None:
        return None
    variant = config.ab.control if config.ab.design == "shadow" else None
    return held_pairs(store, model, week.window, rows, total, variant)


# --- the whole document -------------------------------------------------------------------------------------------
def report_document(store: Store, config: Config, model: str, week: IsoWeek, now: float,
                    week_reason: str = "given") -> dict[str, Any]:
    """The weekly report of one model and ISO week as plain JSON types (see the module docstring); a week holding
    now is read up to the end of the bucket holding now (weeks.reported_part)."""
    week = reported_part(week, store, config.bucket_s)
    metrics = metrics_document(store, config, MetricsQuery(model, week.window.seconds, at=week.until))
    triggers = trigger_judgements(store, config, model, week.until, _drift_provider())
    days = daily(store, config, model, week)
    rows = window_rows(store, model, week.window, features=False)
    total, _ = group_stats(rows, config.ab)  # shadow mode: the production arm only
    all_hist = total.hist[NEG] + total.hist[POS] + total.hist[UNL]
    drift = drift_section(store, config, model, week)
    drift_score = drift["document"].get("score") if drift.get("available") else None
    prevalence = metrics["metrics"]["prevalence"]["value"]
    alerts = [r for r in history.history(store, model, since=week.start, limit=100_000) if r["at"] < week.until]
    alerts.sort(key=lambda r: (r["at"], r["id"]))
    doc: dict[str, Any] = {
        "kind": "driftline.weekly_report", "version": REPORT_VERSION, "model": model, "week": week.label,
        "week_reason": week_reason, "window": week.window.to_json(), "generated_at": iso(now),
        "threshold": metrics["threshold"], "config_threshold": config.threshold,
        "threshold_in_force": metrics["threshold_in_force"], "flag_rule": flag_rule(metrics["threshold_in_force"]),
        "currency": None if config.costs is None else config.costs.currency,
        "costs_configured": config.costs is not None, "domain": msgspec.structs.asdict(config.domain),
        "targets": dict(config.targets),
        "partial_week": now < week.end,
        "headline": {"rows": headline(metrics, config, triggers), "triggers": triggers, "metrics": metrics},
        "trends": {"days": days},
        "label_maturity": label_maturity(store, config, model, week, metrics, days, now),
        "drift": drift,
        "score_distribution": score_distribution(all_hist, reference_scores(store, model, drift), drift_score,
                                                 drift.get("reason")),
        "calibration": calibration_section(store, config, model, week),
        "slices": slices_section(store, config, model, week),
        "ab": ab_section(store, config, model, week),
        "alerts": {"transitions": [{**r, "at": iso(r["at"])} for r in alerts],
                   "fired": sum(1 for r in alerts if r["to_state"] == "firing")},
        "business": business_section(metrics, config.costs, dict(config.targets)),
        "thresholds": threshold_table(np.asarray(total.hist[NEG]), np.asarray(total.hist[POS]), config.costs,
                                      prevalence, _deployed(metrics), configured=config.threshold,
                                      deployed_counts=_deployed_counts(metrics),
                                      pairs=_held_pairs(store, config, model, week, rows, total)),
    }
    mark_in_force(doc["thresholds"].get("rows", []), metrics["threshold_in_force"])
    if doc["thresholds"].get("cost_optimal"):
        doc["thresholds"]["cost_optimal"]["judgement"] = judge_cost_optimal(doc["thresholds"], doc["calibration"])
    doc["provisional"] = bool(doc["label_maturity"]["provisional"] or doc["partial_week"])
    doc["limitations"] = limitations(doc)
    doc["summary"] = summary_sentence(doc)
    doc["summary_status"] = summary_status(doc)
    doc["week_phrase"] = week_phrase(week_reason)
    doc["glossary"] = [{"term": t, "definition": d} for t, d in glossary(config.domain)]
    return doc


def limitations(doc: dict[str, Any]) -> list[str]:
    """The "what this report does not show" list: fixed caveats plus the ones this week's data calls for."""
    out = []
    lm = doc["label_maturity"]
    cov = lm["coverage"]
    if cov.get("value") is not None and cov["value"] < 1.0:
        out.append(f"Unlabelled predictions ({numbers.percent(1 - cov['value'])} of the week): recall, FPR and precision use "
                   "labelled predictions only. If outcomes arrive faster for one class (e.g. "
                   f"{doc['domain']['positives']} reported before {doc['domain']['negatives']} are confirmed), "
                   "the labelled mix is not the traffic's mix.")
    mp = doc["headline"]["metrics"].get("matured_part")
    if mp:  # implicit-negative policy, a week reaching into the maturity period (analysis.matured)
        out.append(f"Negatives not all known yet: FPR, precision and every metric that reads negatives cover only "
                   f"the predictions before {mp['before']} ({numbers.count(mp['predictions'])} of "
                   f"{numbers.count(mp['predictions'] + mp['young_predictions'])}), the ones old enough for their "
                   f"implicit label; {numbers.count(mp['awaiting_implicit'])} younger ones still await it. Recall "
                   f"and the alert rate cover the whole week.")
    if doc["provisional"]:
        out.append(f"Final numbers: this week's metrics can still move ({lm['note']}). Re-run `driftline report "
                   f"--week {doc['week']}` once its days have matured.")
    out.append("Causes: drift statistics say that an input distribution moved, not why, nor whether it hurt the "
               "model; recall and FPR say whether performance moved, not which input moved it.")
    if not doc["costs_configured"]:
        out.append("Money: costs are not configured (no `costs:` section), so no monthly figure, cost or "
                   "cost-optimal threshold is shown.")
    else:
        out.append("Guaranteed business results: the monthly KPIs extrapolate one week's recall, FPR and "
                   "prevalence to the configured monthly volume with the configured unit costs; they are "
                   "estimates, not accounting figures, and complaints are modelled (complaint rate × false "
                   "alarms), not counted.")
        out.append("An out-of-sample threshold choice: the cheapest threshold in the trade-off table is chosen "
                   "on the same week it is evaluated on (in-sample, optimistic); confirm it on a later week or in "
                   "an A/B test before changing the deployed threshold.")
    out.append("Individual predictions, explanations, and groups other than the configured slices.")
    for key, title in (("drift", "Drift"), ("calibration", "Calibration"), ("slices", "Slices"), ("ab", "A/B")):
        if not doc[key].get("available"):
            out.append(f"{title}: not available ({doc[key].get('reason')}).")
    return out
