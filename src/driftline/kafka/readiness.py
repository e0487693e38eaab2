"""What `/readyz` answers for a `run` process: the first problem in order of cause, or the partitions it owns."""

from __future__ import annotations

from typing import Any

from .resets import unresolved_reason

POLL_FAILING_S = 30.0
"""Polls failing in a row this long make the process not ready: a batch that cannot be decoded (or another error
kafka-python raises at every poll) stops its partition while the broker and the group look fine."""


def consumer_readiness(lc: Any) -> tuple[bool, str]:
    """(ready, reason) of a LiveConsumer: broker connected, polls not failing for POLL_FAILING_S, not left without
    partitions by a group shared with another database (group_db.py; the member that keeps them is ready, its reason
    says so), database writable (db_health.py), partitions owned (after a grace period) and no offset-reset problem
    left unresolved."""
    s = lc.status
    kafka = s.kafka_problem(lc.monotonic())
    if kafka is not None:
        return False, kafka
    failing = s.polls.failing_for()
    if failing >= POLL_FAILING_S:
        return False, (f"kafka poll failing for {failing:.0f}s ({s.polls.attempts} attempts): {s.polls.last}; the "
                       "partition it stops at is not consumed")
    group = lc.group.problem()
    if group is not None and lc.group.excluded():
        return False, group
    if not s.db_ok:
        return False, s.db_error or "database unavailable: consuming paused"
    unresolved = dict(lc.unresolved)
    if unresolved:
        return False, unresolved_reason(unresolved)
    since = lc.unowned_since
    if since is not None and lc.monotonic() - since > lc.settings.unassigned_grace_s:
        return False, (f"no partition assigned for {lc.monotonic() - since:.0f}s (group rebalancing, or more "
                       "processes than partitions)")
    lag = "" if s.lag is None else f", lag {s.lag}"
    warning = "" if group is None else f"; but {group}"  # ready: it keeps the partitions (group_db.py)
    return True, f"kafka ok: {s.assignment()}{lag}{warning}"
