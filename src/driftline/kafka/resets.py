"""Stored positions are checked against the log before they are trusted (on every assignment, and when a fetch
or the high-water mark says the position left the log, or the topic's id changed): a position beyond the log end
(the topic or the broker was reset), before its start (retention deleted unread data) or stored under another
topic id (log_ids.py: a replaced log, whatever its offsets) is logged, counted, alerted on and handled by
`kafka.on_offset_reset` — `fail` (partition stopped, /readyz 503, recorded in the database until a restart with
another policy), `earliest` (resume at the log start) or `latest` (resume at the log end)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass

from kafka import TopicPartition
from kafka.errors import OffsetOutOfRangeError

from ..core.engine import EngineResult
from ..core.events import iso
from ..storage.store import Store
from .settings import KafkaSettings

log = logging.getLogger(__name__)

POLICIES = ("fail", "earliest", "latest")


@dataclass(frozen=True)
class Problem:
    """A stored position that no longer points into the log it was read from: `beyond_end` (log reset or
    truncated), `before_start` (retention) or `replaced` (the topic's id changed: deleted and recreated, or the
    broker restarted empty, whatever the offsets say). `start`..`end` is the log as found, at `found_at` (epoch
    seconds; None in records written before it was kept); `old_end`: loss.py."""

    kind: str
    stored: int
    start: int
    end: int
    found_at: float | None = None
    old_end: int | None = None
    """The reset log's end as this process last saw it before (None: unknown); loss.py."""

    def describe(self, topic: str, partition: int, now: tuple[int, int] | None = None) -> str:
        """What is wrong, with the log range `now` (start, end) when given and other than as found: a recorded
        problem is shown for as long as it is unresolved, while the new log grows (it said 'log 0..0' when the
        log held thousands of records) or is reset again (a log ending below its end when found)."""
        found = f"{self.start}..{self.end}"
        when = "when found" + ("" if self.found_at is None else f" at {iso(self.found_at)}")
        current = None if now is None or now == (self.start, self.end) else f"{now[0]}..{now[1]}"
        again = "; reset again since" if now is not None and now[1] < self.end else ""
        if self.kind == "replaced":
            log_range = found if current is None else f"{current} now, {found} {when}{again}"
            return (f"{topic}[{partition}] stored position {self.stored} belongs to a log that was replaced (the "
                    f"topic's id changed: it was deleted and recreated, or the broker restarted empty; new log "
                    f"{log_range}): the topic or the broker was reset")
        where = "beyond the log end" if self.kind == "beyond_end" else "before the log start"
        state = f"is {where} (log {found})" if current is None else \
            f"was {where} {when} (log {found} then, {current} now{again})"
        return (f"{topic}[{partition}] stored position {self.stored} {state}: "
                + ("the topic or the broker was reset" if self.kind == "beyond_end"
                   else "retention deleted records never read"))


def unresolved_reason(unresolved: Mapping[TopicPartition, str], named: int = 10) -> str:
    """/readyz's reason while partitions are stopped by an offset reset: the first in full, the others by name (at
    most `named`), so the text stays short whatever the partition count (8 held partitions gave 2.5 kB)."""
    tps = sorted(unresolved, key=lambda t: (t.topic, t.partition))
    plural = "s" if len(tps) != 1 else ""
    reason = (f"offset reset unresolved on {len(tps)} partition{plural} (kafka.on_offset_reset: fail; restart with "
              f"earliest or latest to resume): {unresolved[tps[0]]}")
    rest = tps[1:]
    if rest:
        names = ", ".join(f"{tp.topic}[{tp.partition}]" for tp in rest[:named])
        more = f" and {len(rest) - named} more" if len(rest) > named else ""
        reason += (f"; also stopped: {names}{more} (each described in the log and counted in "
                   "driftline_consumer_offset_reset_unresolved)")
    return reason


@dataclass(frozen=True)
class Placement:
    """Where a partition resumes: `seek` (None: stays paused), the stored position the first batch is fenced
    against (`expected`), the problem found, the new stored position to write first (`move_to`) and the log's
    (start, end) now."""

    seek: int | None
    expected: int
    problem: Problem | None = None
    move_to: int | None = None
    log: tuple[int, int] | None = None


def place(stored: int | None, start: int, end: int, policy: str, recorded: Problem | None = None,
          replaced: bool = False) -> Placement:
    """Pure decision for one partition. `stored` None: never read (start at the log start, nothing to lose);
    `recorded`: a problem found earlier under policy `fail` and not yet resolved (it stays one even if the new
    log has meanwhile grown past the stored position); `replaced`: the position was stored under another topic id
    (a new log that may have grown past the stored position: its offsets say nothing)."""
    if recorded is None and stored is None:
        return Placement(seek=start, expected=0)
    if recorded is None and stored is not None and start <= stored <= end and not replaced:
        return Placement(seek=stored, expected=stored)
    cur = stored if stored is not None else 0
    kind = "beyond_end" if cur > end else "before_start" if cur < start else "replaced"  # offsets first, as before ids
    problem = recorded or Problem(kind, cur, start, end)
    if policy == "fail":
        return Placement(seek=None, expected=cur, problem=problem, log=(start, end))
    target = start if policy == "earliest" else end
    return Placement(seek=target, expected=target, problem=problem, move_to=target, log=(start, end))


META_PREFIX = "offset_reset:"


def meta_key(source: str, partition: int) -> str:
    """Meta row holding an unresolved problem of a partition (empty value: none)."""
    return f"{META_PREFIX}{source}:{partition}"


def _decoded(raw: str) -> Problem:
    d = json.loads(raw)
    found_at, old_end = d.get("found_at"), d.get("old_end")
    return Problem(d["kind"], int(d["stored"]), int(d["start"]), int(d["end"]),
                   None if found_at is None else float(found_at), None if old_end is None else int(old_end))


def recorded_problems(store: Store, topics: Mapping[str, str]) -> dict[TopicPartition, Problem]:
    """Every unresolved problem recorded for the partitions of these topics (`topics`: position source → topic),
    read at once: lag and readiness of partitions held by a reset, whichever process owns them."""
    out: dict[TopicPartition, Problem] = {}
    for key, raw in store.meta_prefixed(META_PREFIX).items():
        source, _, partition = key[len(META_PREFIX):].rpartition(":")
        if source in topics and partition.isdigit():
            out[TopicPartition(topics[source], int(partition))] = _decoded(raw)
    return out


def record_problem(store: Store, source: str, partition: int, problem: Problem) -> None:
    """Remember an unresolved problem in the database, so no process resumes the partition silently later (once:
    a re-check shows the log as it is now next to this record, it does not record the problem again)."""
    store.set_meta(meta_key(source, partition), json.dumps(problem.__dict__))


def move_position(store: Store, source: str, partition: int, old: int, new: int,
                  meta: dict[str, str] | None = None) -> None:
    """Compare-and-set the stored position old → new and clear any recorded problem, in one transaction
    (StalePositions when another consumer moved it meanwhile); `meta` rows are written with it."""
    key = (source, partition)
    with store.write() as conn:
        store.commit_batch(conn, EngineResult(), [], {key: new},
                           meta={meta_key(source, partition): "", **(meta or {})}, expected_positions={key: old})


def records_exist(settings: KafkaSettings, wanted: dict[TopicPartition, int], timeout_s: float = 3.0
                  ) -> set[TopicPartition]:
    """The partitions whose log still holds a record at the given offset (or later), read by one group-less
    consumer of its own within `timeout_s`.

    Confirms a suspected `beyond_end` before anything moves: a broker's end offset can lag what was already read
    (tansu's ListOffsets answers the base offset of the last batch), and a false reset would re-read records."""
    from kafka import KafkaConsumer

    from .topic_watch import honour_auto_create

    kwargs = settings.consumer_kwargs()
    # existence, not visibility: a record of a transaction still open (beyond the last stable offset) exists
    kwargs.update(group_id=None, client_id=settings.client_id + "-probe", isolation_level="read_uncommitted")
    kwargs.pop("partition_assignment_strategy", None)
    probe = honour_auto_create(KafkaConsumer(**kwargs), bool(kwargs.get("allow_auto_create_topics")))
    found: set[TopicPartition] = set()
    left = dict(wanted)
    try:
        probe.assign(list(left))
        for tp, offset in left.items():
            probe.seek(tp, offset)
        deadline = time.monotonic() + timeout_s
        while left and time.monotonic() < deadline:
            try:
                polled = probe.poll(timeout_ms=300)
            except OffsetOutOfRangeError as err:
                gone = set(err.args[0]) if err.args and isinstance(err.args[0], dict) else set(left)
                for tp in gone:
                    left.pop(tp, None)
                if left:
                    probe.assign(list(left))
                    for tp, offset in left.items():
                        probe.seek(tp, offset)
                continue
            for tp, recs in polled.items():
                if tp in left and any(r.offset >= left[tp] for r in recs):
                    found.add(tp)
                    left.pop(tp)
        return found
    finally:
        probe.close(autocommit=False)
