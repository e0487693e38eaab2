"""Plain-language parts of the report for readers who are not data scientists: the one-sentence summary built
from the headline rows and trigger states, the glossary, and the words for metrics and the covered week."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import numbers
from ..domain import Domain

METRIC_NAMES = {"recall": "Recall", "fpr": "False positive rate", "precision": "Precision",
                "alert_rate": "Alert rate", "prevalence": "Prevalence", "label_coverage": "Label coverage",
                "roc_auc": "AUC", "average_precision": "Average precision", "brier": "Brier score", "ece": "ECE"}
"""How each headline metric is named in sentences."""

IMPORTANCE = ("recall", "precision", "fpr", "alert_rate", "prevalence", "label_coverage", "roc_auc",
              "average_precision", "brier", "ece", "log_loss")
"""Metrics in the order a reader weighs them: what the model catches, how often it is right, what it costs."""

WEEK_REASONS = {
    "given": "the week asked for",
    "last complete ISO week before now": "the last complete week before now",
    "last complete ISO week before the newest stored prediction": "the last complete week of stored predictions",
    "last complete ISO week before now (no predictions stored)": "the last complete week before now; no "
                                                                 "predictions are stored",
    "week of the newest stored prediction (partial: no complete week stored)": "the newest week with "
                                                                               "predictions, not yet complete",
}
"""reports.weeks.default_week's reasons in plain words."""


def by_importance(items: dict[str, Any]) -> list[tuple[str, Any]]:
    """(metric, value) pairs ordered by IMPORTANCE, metrics not listed after them alphabetically."""
    rank = {m: i for i, m in enumerate(IMPORTANCE)}
    return sorted(items.items(), key=lambda kv: (rank.get(kv[0], len(rank)), kv[0]))


def week_phrase(reason: str) -> str:
    """Why this week was covered, in plain words (unknown reasons pass through)."""
    return WEEK_REASONS.get(reason, reason)


def _reading(r: dict[str, Any]) -> str:
    if r.get("low") is None or r.get("high") is None:
        return numbers.prop(r["value"])
    return f"{numbers.prop(r['value'])} {numbers.interval(r['low'], r['high'])}"


def _target_text(value: float) -> str:
    """An agreed line as it was written ('0.70', '0.085')."""
    return numbers.line(value)


def missed_targets(rows: list[dict[str, Any]]) -> list[str]:
    """'Recall is 0.456 [0.415, 0.498], below the agreed 0.70' for each headline row that misses its target."""
    out = []
    for r in rows:
        t = r.get("target")
        if not t or t.get("met") is not False:
            continue
        side = "above" if t["direction"] == "at most" else "below"
        name = METRIC_NAMES.get(r["metric"], r["metric"])
        out.append(f"{name} is {_reading(r)}, {side} the agreed {_target_text(t['value'])}")
    return out


def _firing(doc: dict[str, Any], during: bool) -> list[dict[str, Any]]:
    """Triggers whose live state is firing: `during`, those firing since before the week's end (the week's own
    alerts); else those that began firing after it (today's state, not the week's: a week without predictions
    read "Alert recall_below_target firing since 2026-11-28", a date after the week)."""
    end = doc["window"]["end"]
    return [t for t in doc["headline"]["triggers"] if t.get("live") and t["live"]["state"] == "firing"
            and (str(t["live"]["since"]) < end) == during]


def as_of(ts: str) -> str:
    """'2026-12-05T02:01:00Z' → '2026-12-05 02:01 UTC': when the live states were read."""
    return f"{ts[:10]} {ts[11:16]} UTC"


def no_predictions(doc: dict[str, Any]) -> bool:
    """Whether the week has no stored prediction at all (nothing in it can be judged)."""
    return not doc["headline"]["metrics"]["counts"]["predictions"]


def summary_status(doc: dict[str, Any]) -> str:
    """'bad' (a target missed or an alert firing during the week), 'good' (every judged target met, no input
    drifted) or 'info' (nothing judged, or inputs drifted): the colour of the summary."""
    rows = doc["headline"]["rows"]
    if _firing(doc, during=True) or missed_targets(rows):
        return "bad"
    judged = [r for r in rows if r.get("target") and r["target"]["met"] is not None]
    drifted = doc["drift"].get("available") and (doc["drift"].get("document") or {}).get("drifted")
    return "good" if judged and not drifted else "info"


def summary_sentence(doc: dict[str, Any]) -> str:
    """One sentence saying whether the week is fine: missed targets with their intervals, firing alerts (and
    since when), metrics that could not be judged; else that every headline metric is within its target."""
    rows = doc["headline"]["rows"]
    parts = missed_targets(rows)
    for t in _firing(doc, during=True):
        parts.append(f"alert {t['name']} firing since {str(t['live']['since'])[:10]}")
    judged = [r for r in rows if r.get("target")]
    unjudged = [METRIC_NAMES.get(r["metric"], r["metric"]).lower() for r in judged if r["target"]["met"] is None]
    if no_predictions(doc):
        text = "No predictions stored for this week, so nothing in it can be judged"
        if parts:
            text += "; " + "; ".join(parts)
    elif parts:
        text = "; ".join(parts)
        text = text[:1].upper() + text[1:]
    elif not judged and doc["headline"]["triggers"]:
        # verify: triggers on label delays or silence alone read "No targets or triggers are configured" beside a
        # trigger table with a line breached at the week's end
        breached = [str(t["name"]) for t in doc["headline"]["triggers"]
                    if (t.get("at_week_end") or {}).get("state") == "breached"]
        text = "No headline metric has a target or trigger, so none is judged"
        if breached:
            text += f"; trigger line crossed at the week's end: {', '.join(breached)}"
    elif not judged:
        text = "No targets or triggers are configured, so nothing is judged"
    elif len(unjudged) == len(judged):
        text = "No headline metric can be judged yet: there are no labelled outcomes for this week"
        matured = (doc.get("label_maturity") or {}).get("matured_week")
        if matured:
            text += f" (the newest week whose labels have matured is {matured})"
    else:
        text = "All headline metrics within their targets"
        if unjudged:
            text += f" (not enough labelled data to judge {', '.join(unjudged)})"
    drifted = (doc["drift"].get("document") or {}).get("drifted") if doc["drift"].get("available") else None
    if drifted:
        text += f"; inputs drifted: {', '.join(str(d) for d in drifted[:5])}{' …' if len(drifted) > 5 else ''}"
    later = _firing(doc, during=False)
    if later:
        names = ", ".join(f"{t['name']} (since {str(t['live']['since'])[:10]})" for t in later)
        text += f"; after this week, as of {as_of(doc['generated_at'])}: alert firing {names}"
    return text + "."


def glossary(words: Domain) -> list[tuple[str, str]]:
    """(term, definition) of every abbreviation and statistic the report uses, in the domain's words."""
    pos, neg, pred = words.positives, words.negatives, words.predictions
    return [
        ("Recall", f"share of {pos} that the model flagged (higher is better)."),
        ("Precision", f"share of flagged {pred} that turned out to be {pos}."),
        ("FPR (false positive rate)", f"share of {neg} that were flagged anyway: false alarms (lower is better)."),
        ("Alert rate", f"share of all {pred} flagged at the deployed threshold: the review workload."),
        ("Prevalence", f"share of labelled {pred} that are {pos}."),
        ("Label coverage", f"share of {pred} whose real outcome is known yet; outcomes arrive late, so recent "
                           "days are less covered."),
        ("AUC", f"chance that one of the {pos} picked at random scores higher than one of the {neg} picked at "
                "random (0.5 = guessing, 1 = perfect)."),
        ("Average precision", "precision averaged over all thresholds (the area under the precision–recall curve)."),
        ("Brier score", "mean squared gap between score and outcome (lower is better)."),
        ("ECE (expected calibration error)", "average gap between the scores and the observed share of "
                                             f"{pos}: a score of 0.3 should mean 30 %."),
        ("PSI (population stability index)", "how far a distribution moved from the reference period; "
                                             "above 0.1 worth a look, above 0.25 a large shift."),
        ("JS (Jensen–Shannon distance)", "another distance between two distributions, from 0 (same) to 1."),
        ("Noise floor", "how large a statistic gets by chance alone at these sample sizes (95th percentile)."),
        ("95 % interval", "the range the true value lies in with 95 % confidence; narrower with more data."),
        ("n", "how many cases a rate is computed from; * marks fewer than 30 (indicative only)."),
        ("Threshold", f"{pred} scoring at or above it are flagged."),
        ("Provisional", "some outcomes have not arrived yet, so the numbers can still move."),
    ]


def _amount_range(lo: float, hi: float, money: Callable[[float], str]) -> str:
    """'€11,314 to €87,168 saved' / '€11,314 to €87,168 more' / '€5,000 more to €9,000 saved': sign and word agree."""
    lo, hi = min(lo, hi), max(lo, hi)
    if lo >= 0:
        return f"{money(lo)} to {money(hi)} saved"
    if hi <= 0:
        return f"{money(-hi)} to {money(-lo)} more"
    return f"{money(-lo)} more to {money(hi)} saved"


def kpi_sentence(v: dict[str, Any], baseline: str, words: dict[str, str], money: Callable[[float], str]) -> str:
    """The model against the baseline per month in words whose sign agrees with the numbers, e.g. 'Against the
    rules engine, the model costs €49,473 more a month (range €11,314 to €87,168 more), 120 analyst hours fewer,
    …' (`v` is business.versus_baseline; `money` formats an amount)."""
    s = v["savings"]
    head = (f"saves {money(s)} a month" if s >= 0 else f"costs {money(-s)} more a month")
    hours, caught, compl = v["review_hours_saved"], v["extra_caught"], v["complaints_avoided"]
    rng = _amount_range(v["savings_low"], v["savings_high"], money)
    return (f"Against the {baseline}, the model {head} (range {rng}), {numbers.count(abs(hours))} "
            f"{words['review_hours']} {'fewer' if hours >= 0 else 'more'}, "
            f"{numbers.count(abs(caught))} {'more' if caught >= 0 else 'fewer'} {words['positives']} caught and "
            f"{numbers.count(abs(compl))} {'fewer' if compl >= 0 else 'more'} complaints.")


def cost_optimal_sentence(t: dict[str, Any], deployed: float, review_hours: str,
                          money: Callable[[float], str]) -> str:
    """The cost-optimal threshold C_FP/(C_FP+C_FN) with its verdict (business.judge_cost_optimal): recommended
    only when the scores are calibrated (ECE within its noise floor) and it costs no more than the deployed
    threshold on this week's labels; otherwise it says why it is not usable (`t` is the thresholds section)."""
    co = t["cost_optimal"]
    head = (f"Cost-optimal threshold for calibrated scores: C_FP / (C_FP + C_FN) = {money(co['c_fp'])} / "
            f"({money(co['c_fp'])} + {money(co['c_fn'])}) = {numbers.stat(co['threshold'])}")
    row = t.get("cost_optimal_row") or {}
    at = ""
    if row.get("monthly"):
        where = ("" if row.get("grid_edge") is None else
                 f", counted at the score-grid edge {row['grid_edge']:g}, the nearest at or above it: the week's "
                 f"scores are no longer all held, and the histogram has no finer threshold")
        at = (f" (at it{where}: recall {numbers.rate(row['recall'])}, "
              f"{numbers.count(row['monthly']['review_hours'])} {review_hours}, total {money(row['monthly']['total'])}"
              f" a month)")
    j = co.get("judgement") or {}
    why = []
    if j.get("miscalibrated"):
        why.append(f"scores miscalibrated, ECE {numbers.stat(j.get('ece'))} vs noise floor "
                   f"{numbers.stat(j.get('floor'))}, so the formula does not apply")
    if j.get("costs_more"):
        why.append(f"on this week's labels it costs {money(j['extra_cost'])} more a month than the deployed "
                   f"threshold {deployed:g}")
    if why:
        return f"{head}{at}: not usable ({'; '.join(why)}). Do not move the threshold to it."
    return f"{head}{at}."


def cost_minimum_sentence(t: dict[str, Any], money: Callable[[float], str]) -> str:
    """The cheapest threshold of all on the week's labels (business.cost_minimum), saying how it was searched:
    exactly over every held score, or over the score-grid edges with their step there; '' without one."""
    c = t.get("cost_minimum")
    if not c or not c.get("monthly"):
        return ""
    how = ("exact: every threshold searched, the counts changing only at the week's scores, all held"
           if c["exact"] else
           f"the best score-grid edge, a grid of step {c['grid_step']:.2g} there: the week's scores are no longer all "
           f"held, so no threshold between the edges can be priced")
    return (f"Cheapest threshold on this week's labels: {c['threshold']:g} ({how}), total "
            f"{money(c['monthly']['total'])} a month at recall {numbers.rate(c['recall'])}; in-sample, so confirm it "
            f"on later data.")
