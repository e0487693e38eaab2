"""The weekly report's headline table: each rate against its agreed target (met, met with confidence) and each
trigger judged at the week's end next to its live state."""

from __future__ import annotations

from typing import Any

from ..config import Config
from ..readouts.windows import iso
from ..storage.store import Store
from ..targets import LOWER_IS_BETTER, agreed_target
from ..triggers import history
from ..triggers.definition import definition
from ..triggers.model import INSUFFICIENT, Rule, breached, judged_value
from ..triggers.runner import Reader, compile_rules

HEADLINE = ("recall", "fpr", "precision", "alert_rate", "prevalence")


def target_check(metric: str, r: dict[str, Any], target: float | None, lower_better: bool | None = None,
                 source: str = "targets") -> dict[str, Any] | None:
    """A pre-agreed target against the estimate and its interval: met (estimate) and met_confidently (interval).
    The direction is the metric's (LOWER_IS_BETTER) unless given; `source` says where the target came from."""
    if target is None:
        return None
    lower_better = metric in LOWER_IS_BETTER if lower_better is None else lower_better
    out: dict[str, Any] = {"value": target, "direction": "at most" if lower_better else "at least",
                           "source": source, "met": None, "met_confidently": None}
    if r.get("value") is None:
        return out
    # bool(): a numpy value compared gives numpy.bool_, which the JSON report cannot write (a roc_auc target did)
    if lower_better:
        out["met"] = bool(r["value"] <= target)
        out["met_confidently"] = bool(r["high"] is not None and r["high"] <= target)
    else:
        out["met"] = bool(r["value"] >= target)
        out["met_confidently"] = bool(r["low"] is not None and r["low"] >= target)
    return out


def trigger_judgements(store: Store, config: Config, model: str, at: float,
                       drift: Any = None) -> list[dict[str, Any]]:
    """Each trigger's line judged at the week's end on its own window (as the evaluator reads it, without the
    for/cooldown state machine: breached / ok / insufficient_data), next to its live stored state and whether that
    was judged under the configured definition (live.definition: current, changed or unknown)."""
    rules: list[Rule] = compile_rules(config.triggers)
    if not rules:
        return []
    reader = Reader(store, config, model, at, at, drift)
    live = history.load_states(store, model)
    out = []
    for rule in rules:
        obs = reader.observe(rule)
        judged = judged_value(rule, obs)
        if obs.value is None or judged is None or obs.n < rule.min_n:
            verdict = INSUFFICIENT
        else:
            verdict = "breached" if breached(rule, judged) else "ok"
        s = live.get(rule.name)
        out.append({**rule.to_json(), "at_week_end": {"state": verdict, **obs.to_json(), "judged": judged},
                    "live": None if s is None else {"state": s.state, "since": iso(s.since),
                                                    "updated_at": iso(s.updated_at),
                                                    "definition": definition(rule, s)}})
    return out


def headline_target(metric: str, r: dict[str, Any], config: Config) -> dict[str, Any] | None:
    """The row's target check against the metric's agreed target (targets.agreed_target: the config's
    `targets` entry, else the strictest line of the model-wide triggers on it)."""
    t = agreed_target(config, metric)
    return None if t is None else target_check(metric, r, t.value, lower_better=t.lower_better, source=t.source)


def headline(metrics: dict[str, Any], config: Config, triggers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of the headline table: the rate with interval and n, its target check, the triggers watching it."""
    rows = []
    m = metrics["metrics"]
    entries = [(k, m[k]) for k in HEADLINE] + [("label_coverage", metrics["label_coverage"])]
    for name, r in entries:
        rows.append({"metric": name, **r, "target": headline_target(name, r, config),
                     "triggers": [t["name"] for t in triggers if t["metric"] == name]})
    for name in ("roc_auc", "average_precision", "brier", "ece"):
        v = m[name]["value"]
        lo, hi = m[name].get("low"), m[name].get("high")  # ROC AUC's DeLong interval; the others have none
        judged = {"value": v, "low": v if lo is None else lo, "high": v if hi is None else hi}
        c = metrics["counts"]
        n = {"roc_auc": min(c["positives"], c["negatives"]), "average_precision": c["positives"]}.get(name, c["labelled"])
        rows.append({"metric": name, "value": v, "low": lo, "high": hi, "n": n,  # the n a trigger's min_n reads
                     "indicative": False, "target": headline_target(name, judged, config),
                     "triggers": [t["name"] for t in triggers if t["metric"] == name]})
    return rows
