"""Trigger notifications: Alertmanager v2 API and a generic JSON webhook (stdlib urllib), with retries.

Alertmanager gets every firing trigger on each evaluation (its endsAt a few evaluation intervals ahead, as
Prometheus does, so a driftline that stops evaluating lets them expire) and a resolved alert (endsAt = the
resolve time) when one clears. A one-shot evaluation (`alerts evaluate`, refresh_s None) has no next pass to
refresh its alerts, so a firing alert's endsAt is a year ahead: it resolves only when an evaluation says so.
The labels are {alertname, model, trigger, severity} and the static `notify.labels` (e.g. cluster, job); with notify.alertmanager_url set driftline is the only
sender of trigger alerts (`alerts render` renders no rule for them), so Alertmanager pages once per condition. The webhook gets one POST per evaluation that produced notices (firing,
repeat after the cooldown, resolved). Failed attempts are retried with exponential backoff (sleep injected),
counted in driftline_notifications_failed_total{receiver} and logged. With no receiver configured, notices are
only logged (the alert history stores them either way).
"""

from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .. import numbers
from ..config import Notify
from ..durations import parse_duration
from ..ops import OpsMetrics
from .metrics import canonical, fmt_line, info, shown_value
from . import history
from .model import FIRING, NOTICE_RESOLVED, Notice, Rule, TriggerState
from .runner import EvaluationRun
from ..storage.store import Store
from .rules import alert_name, runbook_url
from ..readouts.windows import iso

log = logging.getLogger(__name__)

ALERTMANAGER, WEBHOOK = "alertmanager", "webhook"
MAX_BACKOFF_S = 60.0
ONE_SHOT_HOLD_S = 365 * 86400.0
"""endsAt of a firing alert sent by a one-shot evaluation: far enough that only a resolve ends it."""


@dataclass(frozen=True, slots=True)
class Delivery:
    """Outcome of one POST (after retries)."""

    receiver: str
    ok: bool
    attempts: int
    status: int | None
    error: str | None = None


def fmt_value(rule: Rule, value: float | None) -> str:
    """A metric value for people in the rule of every other output (metrics.shown_value: a ratio as a proportion
    '0.255', a statistic with 4 places, seconds as a duration); 'n/a' when missing."""
    return "n/a" if value is None else shown_value(rule.metric, value)


def summary(rule: Rule, model: str, state: TriggerState, kind: str) -> str:
    """One-line summary: what is past which line, or that it resolved."""
    metric = canonical(rule.metric) + (f"[{rule.feature}]" if rule.feature else "")
    bounded = (rule.mode == "confident" and info(rule.metric).has_interval  # else the estimate was judged
               and state.low is not None)
    judged = ("upper 95% bound of " if rule.below else "lower 95% bound of ") if bounded else ""
    where = f"{model}" + (f" variant {rule.variant}" if rule.variant else "")
    head = "Resolved: " if kind == NOTICE_RESOLVED else ""
    value = numbers.apart(fmt_value(rule, state.judged), state.judged, rule.value)
    return f"{head}{judged}{metric} of {where} is {value} over {state.window} (line {rule.op} {fmt_line(rule)})"


def description(rule: Rule, model: str, state: TriggerState, kind: str) -> str:
    """The evidence: estimate, 95 % interval and n, the window, and the trigger's own description."""
    parts = [rule.description.strip()] if rule.description else []
    interval = ""
    if state.low is not None and state.high is not None:
        interval = f", 95 % interval [{fmt_value(rule, state.low)}, {fmt_value(rule, state.high)}]"
    parts.append(f"{canonical(rule.metric)} = {fmt_value(rule, state.value)}{interval}, n = {numbers.count(state.n)} "
                 f"(minimum {rule.min_n}), window {state.window}, mode {rule.mode}, trigger {rule.name} "
                 f"({rule.severity}).")
    if kind == NOTICE_RESOLVED:
        parts.append("Back past the line" + (f" by at least {rule.hysteresis:g}" if rule.hysteresis else "")
                     if state.state != "insufficient_data" else "Now below the minimum n (insufficient data).")
    return " ".join(parts)


def deliver(notifier: Notifier | None, store: Store, run: EvaluationRun) -> list[Delivery]:
    """Send a stored evaluation's notices (and refresh its firing alerts); when receivers are configured and none
    accepted them, its history rows say `notified: false` (they were stored as notified before the send)."""
    if notifier is None:
        return []
    firing = [(r, s) for r, s in zip(run.rules, run.states) if s.state == FIRING]
    deliveries = notifier.notify(run.notices, firing)
    sent = [t for t in run.transitions if t.notified]
    if sent and notifier.receivers and not any(d.ok for d in deliveries):
        history.mark_undelivered(store, run.model, [(t.trigger, t.at) for t in sent])
    return deliveries


class Notifier:
    """Delivers notices to the configured receivers; counts and logs deliveries and failures."""

    def __init__(self, settings: Notify, model: str, *, ops: OpsMetrics | None = None,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.time,
                 generator_url: str | None = None, refresh_s: float | None = 300.0) -> None:
        self.settings, self.model, self.ops = settings, model, ops
        self.sleep, self.clock, self.refresh_s = sleep, clock, refresh_s
        self.generator_url = settings.generator_url or generator_url
        """Where the alert links back to: notify.generator_url, else the serving process's /triggers; None (no
        link) for a one-shot evaluation, where nothing listens."""
        self.timeout = parse_duration(settings.timeout)
        self.backoff = parse_duration(settings.backoff)
        if ops is not None:
            ops.receivers(self.receivers)

    @property
    def receivers(self) -> list[str]:
        """Names of the configured receivers (metric label `receiver`)."""
        return [n for n, url in ((ALERTMANAGER, self.settings.alertmanager_url),
                                 (WEBHOOK, self.settings.webhook_url)) if url]

    def alert(self, rule: Rule, state: TriggerState, kind: str, starts_at: float, ends_at: float | None
              ) -> dict[str, Any]:
        """One Alertmanager v2 alert (postableAlert)."""
        name = alert_name(rule.name)
        annotations = {"summary": summary(rule, self.model, state, kind),
                       "description": description(rule, self.model, state, kind),
                       "runbook_url": runbook_url(rule, self.settings.runbook_base_url)}
        hold = ONE_SHOT_HOLD_S if self.refresh_s is None else self.refresh_s
        end = ends_at if ends_at is not None else max(self.clock(), state.updated_at) + hold
        labels = {**self.settings.labels,
                  "alertname": name, "severity": rule.severity, "model": self.model, "trigger": rule.name}
        out = {"labels": labels,
               "annotations": annotations, "startsAt": iso(starts_at), "endsAt": iso(end)}
        if self.generator_url:
            out["generatorURL"] = self.generator_url
        return out

    def notify(self, notices: Sequence[Notice], firing: Sequence[tuple[Rule, TriggerState]] = ()
               ) -> list[Delivery]:
        """Send this evaluation's notices (and refresh still-firing alerts in Alertmanager)."""
        for n in notices:
            level = logging.WARNING if not self.receivers or n.kind != NOTICE_RESOLVED else logging.INFO
            log.log(level, "trigger %s %s: %s", n.rule.name, n.kind, summary(n.rule, self.model, n.state, n.kind))
        out: list[Delivery] = []
        if self.settings.alertmanager_url:
            noticed = {n.rule.name for n in notices}
            alerts = [self.alert(n.rule, n.state, n.kind, n.starts_at, n.ends_at) for n in notices]
            alerts += [self.alert(r, s, "firing", s.firing_since or s.since, None)
                       for r, s in firing if r.name not in noticed]
            if alerts:
                url = self.settings.alertmanager_url.rstrip("/") + "/api/v2/alerts"
                out.append(self.post(ALERTMANAGER, url, alerts))
        if self.settings.webhook_url and notices:
            out.append(self.post(WEBHOOK, self.settings.webhook_url, self.webhook_body(notices)))
        return out

    def webhook_body(self, notices: Sequence[Notice]) -> dict[str, Any]:
        """Generic JSON webhook document: one entry per notice with the full evidence, and the static
        `notify.labels` that tell one deployment's notices from another's (as on its Alertmanager alerts)."""
        return {"version": "1", "source": "driftline", "model": self.model, "labels": dict(self.settings.labels),
                "notifications": [
            {"trigger": n.rule.name, "alertname": alert_name(n.rule.name), "kind": n.kind, "status": n.status,
             "severity": n.rule.severity, "metric": canonical(n.rule.metric), "feature": n.rule.feature,
             "variant": n.rule.variant, "op": n.rule.op, "threshold": n.rule.value, "mode": n.rule.mode,
             "state": n.state.state, "value": n.state.value, "low": n.state.low, "high": n.state.high,
             "judged": n.state.judged, "n": n.state.n, "window": n.state.window, "at": iso(n.at),
             "starts_at": iso(n.starts_at), "ends_at": iso(n.ends_at) if n.ends_at is not None else None,
             "summary": summary(n.rule, self.model, n.state, n.kind),
             "description": description(n.rule, self.model, n.state, n.kind),
             "runbook_url": runbook_url(n.rule, self.settings.runbook_base_url), "generator_url": self.generator_url}
            for n in notices]}

    def post(self, receiver: str, url: str, body: Any) -> Delivery:
        """POST JSON with retries (exponential backoff); 4xx other than 408/429 is not retried."""
        data = json.dumps(body).encode()
        attempts = 1 + self.settings.retries
        status: int | None = None
        error = ""
        for i in range(attempts):
            if i:
                self.sleep(min(MAX_BACKOFF_S, self.backoff * 2 ** (i - 1)))
            try:
                req = urllib.request.Request(url, data=data, method="POST",
                                             headers={"Content-Type": "application/json",
                                                      "User-Agent": "driftline-notifier"})
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:  # noqa: S310 - configured URL
                    status = resp.status
                if self.ops is not None:
                    self.ops.delivered(receiver)
                log.info("notified %s (%d alert(s)) in %d attempt(s)", receiver,
                         len(body) if isinstance(body, list) else len(body.get("notifications", [])), i + 1)
                return Delivery(receiver, True, i + 1, status)
            except urllib.error.HTTPError as err:
                status, error = err.code, f"HTTP {err.code}: {err.read()[:200].decode('utf-8', 'replace')}"
                retry = err.code >= 500 or err.code in (408, 429)
            except (urllib.error.URLError, OSError, TimeoutError) as err:
                status, error, retry = None, f"{type(err).__name__}: {getattr(err, 'reason', err)}", True
            except Exception as err:  # noqa: BLE001 - e.g. ValueError for a URL urllib cannot open: a failure, counted
                status, error, retry = None, f"{type(err).__name__}: {err}", False
            if self.ops is not None:
                self.ops.failed(receiver)
            log.warning("notification to %s failed (attempt %d/%d): %s", receiver, i + 1, attempts, error)
            if not retry:
                return Delivery(receiver, False, i + 1, status, error)
        log.error("giving up notifying %s after %d attempt(s): %s", receiver, attempts, error)
        return Delivery(receiver, False, attempts, status, error)
