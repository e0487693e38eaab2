"""Trigger states and the pure evaluator: (previous state, observation, now) → new state, transition, notice.

States: ok, pending (breached, waiting for `for`), firing, resolved (cleared; held for one cooldown),
insufficient_data (n below min_n, or no value). `point` judges the estimate, `confident` the interval bound
nearest the line (upper bound for `<`, lower bound for `>`), so it fires only when the whole 95 % interval
is past the line. A firing trigger resolves only when the judged value is back past line ± hysteresis, and no
two firing notifications of a trigger are closer than its cooldown (a breach during the cooldown stays pending).
"""

from __future__ import annotations

import hashlib
import json
import operator
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ..config import Trigger
from ..durations import format_duration, parse_duration
from ..metric_names import canonical

OK, PENDING, FIRING, RESOLVED, INSUFFICIENT = "ok", "pending", "firing", "resolved", "insufficient_data"
STATES = (OK, PENDING, FIRING, RESOLVED, INSUFFICIENT)
"""Every trigger state, in the order the exporter lists them."""

NOTICE_FIRING, NOTICE_REPEAT, NOTICE_RESOLVED = "firing", "repeat", "resolved"

_OPS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


@dataclass(frozen=True, slots=True)
class Rule:
    """A trigger from the config with its durations in seconds (what the evaluator needs)."""

    name: str
    metric: str
    op: str
    value: float
    window_s: float = 7 * 86400.0
    min_n: int = 30
    mode: str = "point"
    severity: str = "warning"
    for_s: float = 0.0
    cooldown_s: float = 3600.0
    hysteresis: float = 0.0
    feature: str | None = None
    variant: str | None = None
    runbook_url: str | None = None
    description: str | None = None

    @classmethod
    def from_trigger(cls, t: Trigger) -> Rule:
        """Compile a config Trigger (durations as text) into a Rule."""
        return cls(name=t.name, metric=t.metric, op=t.op, value=t.line, window_s=parse_duration(t.window),
                   min_n=t.min_n, mode=t.mode, severity=t.severity,
                   for_s=parse_duration(t.for_, allow_zero=True) if t.for_ else 0.0,
                   cooldown_s=parse_duration(t.cooldown, allow_zero=True),
                   hysteresis=float(t.hysteresis), feature=t.feature, variant=t.variant,
                   runbook_url=t.runbook_url, description=t.description)

    @property
    def window(self) -> str:
        """Window label as exported ('7d')."""
        return format_duration(self.window_s)

    @property
    def fingerprint(self) -> str:
        """Short stable hash of what the rule judges and against which line (metric, feature, variant, window, mode,
        op, value, min_n), stored with each state so a reading judged under another definition is known as such.
        Timing and routing (for, cooldown, hysteresis, severity, texts) are left out: the next evaluation applies
        them to the kept state, as Prometheus keeps an alert's state when only those change."""
        fields = {"metric": canonical(self.metric), "feature": self.feature, "variant": self.variant,
                  "window_s": float(self.window_s), "mode": self.mode, "op": self.op, "value": float(self.value),
                  "min_n": int(self.min_n)}
        return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:12]

    @property
    def below(self) -> bool:
        """True for `<`/`<=` lines (the metric is bad when low)."""
        return self.op in ("<", "<=")

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "metric": self.metric, "op": self.op, "value": self.value,
                "window": self.window, "min_n": self.min_n, "mode": self.mode, "severity": self.severity,
                "for_seconds": self.for_s, "cooldown_seconds": self.cooldown_s, "hysteresis": self.hysteresis,
                "feature": self.feature, "variant": self.variant, "runbook_url": self.runbook_url,
                "description": self.description, "fingerprint": self.fingerprint}


@dataclass(frozen=True, slots=True)
class Observation:
    """A metric reading: estimate, 95 % interval (None when the metric has none) and the n behind it."""

    value: float | None
    low: float | None = None
    high: float | None = None
    n: int = 0
    interval_expected: bool = False
    """The metric has an interval, but not always (ROC AUC and AP need 2 of a class and varying placements): a
    confident trigger then has nothing to judge (insufficient data), as its Prometheus rule has no bound series."""

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "low": self.low, "high": self.high, "n": self.n}


@dataclass(frozen=True, slots=True)
class TriggerState:
    """Where a trigger stands after an evaluation, with the reading it judged."""

    trigger: str
    state: str
    since: float
    updated_at: float
    window: str
    pending_since: float | None = None
    firing_since: float | None = None
    last_notified: float | None = None
    value: float | None = None
    low: float | None = None
    high: float | None = None
    judged: float | None = None
    n: int | None = None
    fingerprint: str | None = None
    """Rule.fingerprint of the definition that judged this state; None for a state stored before it was recorded."""

    def to_json(self) -> dict[str, Any]:
        return {"trigger": self.trigger, "state": self.state, "since": self.since, "updated_at": self.updated_at,
                "window": self.window, "pending_since": self.pending_since, "firing_since": self.firing_since,
                "last_notified": self.last_notified, "value": self.value, "low": self.low, "high": self.high,
                "judged": self.judged, "n": self.n, "fingerprint": self.fingerprint}


@dataclass(frozen=True, slots=True)
class Transition:
    """A state change (what the alert history stores); from_state is None for a trigger's first evaluation."""

    trigger: str
    at: float
    from_state: str | None
    to_state: str
    value: float | None
    low: float | None
    high: float | None
    judged: float | None
    n: int | None
    window: str
    notified: bool

    def to_json(self) -> dict[str, Any]:
        return {"trigger": self.trigger, "at": self.at, "from": self.from_state, "to": self.to_state,
                "value": self.value, "low": self.low, "high": self.high, "judged": self.judged, "n": self.n,
                "window": self.window, "notified": self.notified}


@dataclass(frozen=True, slots=True)
class Notice:
    """Something to tell the receivers: a trigger started firing, is still firing (repeat) or resolved."""

    rule: Rule
    kind: str
    at: float
    starts_at: float
    ends_at: float | None
    state: TriggerState

    @property
    def status(self) -> str:
        """Alertmanager status: firing (firing/repeat) or resolved."""
        return "resolved" if self.kind == NOTICE_RESOLVED else "firing"


@dataclass(frozen=True, slots=True)
class Evaluation:
    """Result of one evaluation of one trigger."""

    state: TriggerState
    transition: Transition | None
    notice: Notice | None


def judged_value(rule: Rule, obs: Observation) -> float | None:
    """The number compared with the line: the estimate (point) or the interval bound nearest the line
    (confident; the estimate when the metric has no interval, None when it has one but not this time)."""
    if rule.mode == "confident":
        bound = obs.high if rule.below else obs.low
        if bound is not None or obs.interval_expected:
            return bound
    return obs.value


def breached(rule: Rule, judged: float) -> bool:
    """True when the judged value is past the line."""
    return _OPS[rule.op](judged, rule.value)


def cleared(rule: Rule, judged: float) -> bool:
    """True when the judged value is back past the line by at least the hysteresis (a firing trigger resolves)."""
    if rule.below:
        back = rule.value + rule.hysteresis
        return judged > back if rule.op == "<=" else judged >= back
    back = rule.value - rule.hysteresis
    return judged < back if rule.op == ">=" else judged <= back


def evaluate(rule: Rule, prev: TriggerState | None, obs: Observation, now: float) -> Evaluation:
    """Advance one trigger's state machine by one observation at time `now` (pure: no IO, no clock).

    A previous state from the future (now < prev.updated_at, e.g. a historical re-evaluation) is ignored. A previous
    state judged under another definition (prev.fingerprint differs; None, stored before fingerprints, counts as
    the same) keeps its notice timing, but its judgement does not carry over: a breach restarts the `for` wait,
    and a firing trigger stays firing only while the new definition is breached (its hysteresis band holds an
    alert the same definition raised), else it resolves with a resolved notice.
    """
    if prev is not None and (now < prev.updated_at or prev.trigger != rule.name):
        prev = None
    cur = prev.state if prev is not None else None
    fingerprint = rule.fingerprint
    changed = prev is not None and prev.fingerprint is not None and prev.fingerprint != fingerprint
    judged = judged_value(rule, obs)
    last = prev.last_notified if prev is not None else None
    cooling = last is not None and now - last < rule.cooldown_s
    firing_since = prev.firing_since if prev is not None else None
    notice_kind: str | None = None
    pending_since: float | None = None

    if obs.value is None or judged is None or obs.n < rule.min_n:
        new = INSUFFICIENT
        if cur == FIRING:
            notice_kind = NOTICE_RESOLVED
    elif cur == FIRING:
        if not breached(rule, judged) if changed else cleared(rule, judged):
            new = RESOLVED
            notice_kind = NOTICE_RESOLVED
        else:
            new = FIRING
            if last is None or now - last >= rule.cooldown_s:
                notice_kind, last = NOTICE_REPEAT, now
    elif breached(rule, judged):
        start = prev.pending_since if (cur == PENDING and prev is not None and prev.pending_since is not None
                                       and not changed) else now
        if now - start >= rule.for_s and not cooling:
            new, firing_since, last, notice_kind = FIRING, now, now, NOTICE_FIRING
        else:
            new, pending_since = PENDING, start
    elif cur == RESOLVED and prev is not None and now - prev.since < rule.cooldown_s:
        new = RESOLVED
    else:
        new = OK

    # an alert's lifecycle (firing, resolved's cooldown hold) spans an edit; any other state starts with the definition
    kept = prev is not None and new == cur and (new in (FIRING, RESOLVED) or not changed)
    since = prev.since if kept and prev is not None else now
    state = TriggerState(trigger=rule.name, state=new, since=since, updated_at=now, window=rule.window,
                         pending_since=pending_since, firing_since=firing_since if new == FIRING else None,
                         last_notified=last, value=obs.value, low=obs.low, high=obs.high, judged=judged, n=obs.n,
                         fingerprint=fingerprint)
    transition = None
    if new != cur:
        transition = Transition(rule.name, now, cur, new, obs.value, obs.low, obs.high, judged, obs.n, rule.window,
                                notified=notice_kind in (NOTICE_FIRING, NOTICE_RESOLVED))
    notice = None
    if notice_kind is not None:
        starts = firing_since if firing_since is not None else now
        notice = Notice(rule, notice_kind, now, starts, now if notice_kind == NOTICE_RESOLVED else None, state)
    return Evaluation(state, transition, notice)


def replay(rule: Rule, series: list[tuple[float, Observation]], prev: TriggerState | None = None
           ) -> list[Evaluation]:
    """Evaluate a time-ordered series of observations (what-if and tests)."""
    out: list[Evaluation] = []
    for t, obs in series:
        ev = evaluate(rule, prev, obs, t)
        out.append(ev)
        prev = ev.state
    return out


def with_state(state: TriggerState, **changes: Any) -> TriggerState:
    """A copy of a state with some fields changed (tests and storage)."""
    return replace(state, **changes)
