"""One consumer group, one database: members carry their database's identity in the group protocol.

driftline keeps its positions in its database and uses the Kafka group only to split partitions, so two members of
a group are only right when they write to the same database (scale-out). Two deployments on different databases
that share a group (a copied config keeping the default `kafka.group_id`) would silently split the partitions and
each database would hold part of the events. Each member sends its database's id (a random id stored once in the
database, so two URLs naming one database agree; a copy takes its own, storage/identity.py) and when that database
joined the group in its subscription's user_data; the leader gives every partition to the members on the database
that joined first (`keeper`: the same answer whoever leads), none to the others, and tells every member in its
assignment's user_data. Members without an id (an
older driftline during a rolling upgrade) are unknown, never a mismatch: they are assigned as before.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from ..storage.errors import StoreUnavailable
from ..storage.identity import database_id, group_since
from ..storage.store import Store
from ..streak import FailureStreak
from .health import Backoff

log = logging.getLogger(__name__)

SUBSCRIPTION_KEY = "driftline_database"
ASSIGNMENT_KEY = "driftline_group_databases"


ID_RETRY_CAP_S = 2.0
"""Longest wait between reads of the database id at start (as the start-up migration's: resume soon after)."""


def wait_for_database_id(store: Store, stop: threading.Event, backoff: Backoff, group_id: str = "",
                         sources: list[str] | None = None,
                         monotonic: Callable[[], float] = time.monotonic) -> tuple[str, float] | None:
    """(database_id, when it joined the group: group_since), retried while the database is unavailable; None when
    stopped first. The outage is logged at its start, every 300 s and at its end (SRE tryout: a database flapping
    right after the migration logged one warning per attempt, 'retrying in 0s', '1s', '2s', and no end)."""
    streak = FailureStreak("reading the database id", log, monotonic=monotonic)
    while not stop.is_set():
        try:
            got = database_id(store), group_since(store, group_id, sources or [])
        except StoreUnavailable as err:
            streak.failed(err)
            stop.wait(min(backoff.next(), ID_RETRY_CAP_S))
            continue
        streak.succeeded()
        backoff.reset()  # shared with the consumer's outages: the next one starts at the first delay again
        return got
    return None


def _json(data: Any) -> dict[str, Any]:
    """user_data as a JSON object ({} when absent or written by something else)."""
    if not data:
        return {}
    try:
        out = json.loads(bytes(data).decode())
    except (ValueError, TypeError):
        return {}
    return out if isinstance(out, dict) else {}


def member_database(subscription: Any) -> str | None:
    """The database id a member sent in its subscription; None when unknown (older driftline, other client)."""
    value = _json(getattr(subscription, "user_data", None)).get(SUBSCRIPTION_KEY)
    return value if isinstance(value, str) and value else None


def member_since(subscription: Any) -> float:
    """When the member's database joined the group (its claim); +inf when it sent none."""
    value = _json(getattr(subscription, "user_data", None)).get("since")
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else math.inf


def keeper(members: Any) -> tuple[str | None, dict[str, str | None], Counter[str]]:
    """(the database that keeps the partitions, each member's database, members per known database): the one that
    joined the group first (its claim), then the one with more members, then the smallest id — the same answer
    whichever member leads the group (SRE tryout: with the leader's database keeping them, one restart of a
    production member handed the leadership, and every partition, to a staging deployment)."""
    dbs = {m.member_id: member_database(m.metadata) for m in members}
    known = Counter(d for d in dbs.values() if d is not None)
    since: dict[str, float] = {}
    for m in members:
        d = dbs[m.member_id]
        if d is not None:
            since[d] = min(since.get(d, math.inf), member_since(m.metadata))
    chosen = min(known, key=lambda d: (since[d], -known[d], d)) if known else None
    return chosen, dbs, known


@dataclass(frozen=True)
class GroupReport:
    """What the leader told this member about its group's databases at the last assignment."""

    databases: int
    """Distinct database ids among the group's members (1: all on one database)."""
    members_here: int
    """Members on the database that keeps the partitions (the leader's)."""
    members_elsewhere: int
    """Members on other databases (assigned nothing)."""
    kept: bool
    """Whether this member's database is the one that keeps the partitions."""
    keeper: str = ""
    """The id of the database that keeps the partitions."""

    def reason(self, group_id: str) -> str:
        """The /readyz reason and log line: what is wrong, what this member does, how to fix it."""
        if self.kept:
            what = (f"this process's database keeps every partition ({self.members_here} member(s) on it: it "
                    f"joined the group first), the {self.members_elsewhere} member(s) on other databases get none")
        else:
            what = (f"this process is assigned no partition, they stay with the {self.members_here} member(s) on "
                    f"database {self.keeper or '?'}, which joined the group first")
        return (f"kafka group '{group_id}' is shared by driftline processes writing to {self.databases} different "
                f"databases: {what}; give each deployment its own kafka.group_id (processes share a group only "
                "when they share the database)")


class DatabaseRangeAssignor(RangePartitionAssignor):
    """driftline's Range assignor (same protocol name 'range', so older members still join): sends this member's
    database id and when that database joined the group, and gives partitions only to members on the database that
    joined first (`keeper`)."""

    def __init__(self, database: str, since: float = math.inf) -> None:
        self.database, self.since = database, since
        self.report: GroupReport | None = None
        """Set on every assignment (kafka-python's thread), read by the main loop: None = one database or unknown."""
        self.assigned = False
        """Whether an assignment was received (a new client's empty report says nothing yet)."""

    def metadata(self, topics: Any) -> ConsumerProtocolSubscription:  # type: ignore[override]
        data = {SUBSCRIPTION_KEY: self.database, **({"since": self.since} if math.isfinite(self.since) else {})}
        return ConsumerProtocolSubscription(self.version, list(topics), json.dumps(data).encode())

    def assign(self, cluster: Any, members: Any) -> dict[str, ConsumerProtocolAssignment]:  # type: ignore[override]
        """Range over the members on the keeping database (`keeper`) and those of unknown database; none to
        others."""
        chosen, dbs, known = keeper(members)
        if len(known) <= 1:
            return RangePartitionAssignor.assign(cluster, members)
        here = [m for m in members if dbs[m.member_id] in (None, chosen)]
        out = dict(RangePartitionAssignor.assign(cluster, here))
        elsewhere = sum(n for d, n in known.items() if d != chosen)
        for m in members:
            kept = m.member_id in out
            data = {ASSIGNMENT_KEY: len(known), "here": len(here), "elsewhere": elsewhere, "kept": kept,
                    "keeper": chosen}
            parts = out[m.member_id].assigned_partitions if kept else []
            out[m.member_id] = ConsumerProtocolAssignment(self.version, parts, json.dumps(data).encode())
        return out

    def on_assignment(self, assignment: Any, generation: int) -> None:  # type: ignore[override]
        data = _json(getattr(assignment, "user_data", None))
        n = data.get(ASSIGNMENT_KEY)
        self.assigned = True
        self.report = None if not isinstance(n, int) or n < 2 else GroupReport(
            databases=n, members_here=int(data.get("here", 0)), members_elsewhere=int(data.get("elsewhere", 0)),
            kept=bool(data.get("kept")), keeper=str(data.get("keeper") or ""))


class GroupWatch:
    """The member's side: the assignor of its current client, and the report logged once per change."""

    def __init__(self, group_id: str, gauge: Any) -> None:
        self.group_id, self.gauge = group_id, gauge
        self.assignor: DatabaseRangeAssignor | None = None
        self.shown: GroupReport | None = None

    def assignor_for(self, database: str, since: float = math.inf) -> DatabaseRangeAssignor:
        """A fresh assignor for a new Kafka client (its report starts empty)."""
        self.assignor = DatabaseRangeAssignor(database, since)
        return self.assignor

    def problem(self) -> str | None:
        """The /readyz reason while the group spans several databases, else None."""
        report = self.shown
        return None if report is None else report.reason(self.group_id)

    def excluded(self) -> bool:
        """Whether this member was left without partitions for writing to another database than the keeper (it
        is not ready; a member that keeps the partitions does its job and stays ready, the alert pages)."""
        return self.shown is not None and not self.shown.kept

    def check(self) -> None:
        """Take the latest assignment's report: log a change (ERROR while mismatched) and set the gauge."""
        assignor = self.assignor
        if assignor is None or not assignor.assigned:
            return
        report = assignor.report
        if report == self.shown:
            return
        before, self.shown = self.shown, report
        self.gauge.set(1 if report is None else report.databases)
        if report is not None:
            log.error("%s", report.reason(self.group_id))
        elif before is not None:
            log.warning("kafka group '%s': every member now writes to one database again", self.group_id)
