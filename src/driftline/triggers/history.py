"""Persistence of trigger states and the alert history (tables in triggers.tables, migrations 0003, 0015_rulefp)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import and_, delete, select

from ..storage.store import Store
from . import tables as tt
from .model import Rule, Transition, TriggerState

_NONE = "none"


def load_states(store: Store, model: str) -> dict[str, TriggerState]:
    """Current state of every trigger of a model, by trigger name."""
    c = tt.trigger_states.c
    with store.read() as conn:
        rows = conn.execute(select(tt.trigger_states).where(c.model == model)).all()
    return {r.trigger: TriggerState(trigger=r.trigger, state=r.state, since=r.since, updated_at=r.updated_at,
                                    window=r.window, pending_since=r.pending_since, firing_since=r.firing_since,
                                    last_notified=r.last_notified, value=r.value, low=r.low, high=r.high,
                                    judged=r.judged, n=None if r.n is None else int(r.n),
                                    fingerprint=r.fingerprint) for r in rows}


def save(store: Store, model: str, rules: Sequence[Rule], states: Sequence[TriggerState],
         transitions: Sequence[Transition]) -> None:
    """Write the new states and append the transitions to the history, in one transaction."""
    by_name = {r.name: r for r in rules}
    c = tt.trigger_states.c
    with store.write() as conn:
        names = [s.trigger for s in states]
        if names:
            conn.execute(delete(tt.trigger_states).where(and_(c.model == model, c.trigger.in_(names))))
            conn.execute(tt.trigger_states.insert(), [{"model": model, **_state_row(s)} for s in states])
        if transitions:
            conn.execute(tt.alert_history.insert(), [
                {"model": model, "trigger": t.trigger, "at": t.at, "severity": by_name[t.trigger].severity,
                 "metric": by_name[t.trigger].metric, "from_state": t.from_state or _NONE, "to_state": t.to_state,
                 "value": t.value, "low": t.low, "high": t.high, "judged": t.judged,
                 "threshold": by_name[t.trigger].value, "n": t.n, "window": t.window, "notified": t.notified}
                for t in transitions])


def mark_undelivered(store: Store, model: str, rows: Sequence[tuple[str, float]]) -> None:
    """History rows (trigger, at) of a model whose notice no configured receiver accepted: notified false."""
    h = tt.alert_history.c
    with store.write() as conn:
        for trigger, at in rows:
            conn.execute(tt.alert_history.update().where(and_(h.model == model, h.trigger == trigger, h.at == at))
                         .values(notified=False))


def _state_row(s: TriggerState) -> dict[str, Any]:
    return {"trigger": s.trigger, "state": s.state, "since": s.since, "updated_at": s.updated_at,
            "pending_since": s.pending_since, "firing_since": s.firing_since, "last_notified": s.last_notified,
            "value": s.value, "low": s.low, "high": s.high, "judged": s.judged, "n": s.n, "window": s.window,
            "fingerprint": s.fingerprint}


def prune_states(store: Store, model: str, keep: Sequence[str]) -> None:
    """Forget the state of triggers no longer configured (their history stays)."""
    c = tt.trigger_states.c
    with store.write() as conn:
        q = delete(tt.trigger_states).where(c.model == model)
        if keep:
            q = q.where(c.trigger.not_in(list(keep)))
        conn.execute(q)


def history(store: Store, model: str | None = None, trigger: str | None = None, limit: int = 100,
            since: float | None = None) -> list[dict[str, Any]]:
    """Alert history, newest first: when, trigger, transition, value, interval, n, window."""
    h = tt.alert_history.c
    q = select(tt.alert_history).order_by(h.at.desc(), h.id.desc()).limit(limit)
    if model is not None:
        q = q.where(h.model == model)
    if trigger is not None:
        q = q.where(h.trigger == trigger)
    if since is not None:
        q = q.where(h.at >= since)
    with store.read() as conn:
        rows = [dict(r._mapping) for r in conn.execute(q)]
    for r in rows:
        r["from_state"] = None if r["from_state"] == _NONE else r["from_state"]
        r["notified"] = bool(r["notified"])
        r["n"] = None if r["n"] is None else int(r["n"])
    return rows
