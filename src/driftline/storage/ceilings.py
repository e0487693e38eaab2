"""Maintenance ceilings shared by the live consumers (meta rows `ceiling:<member>`): each `run` process records the
event time of its slowest partition with records left (kafka/alignment.py) with a heartbeat, and every maintenance
(`run`'s, `serve`'s job, `replay`'s) caps its watermark at the lowest fresh one, so no process expires or matures a
prediction whose outcome still waits unread in another process's partition. No fresh row: the stored watermark alone.

One row per live member (a process; a restart is a new member): a clean stop deletes its row, and a row whose
heartbeat is more than FRESH_S away from the reader's clock is ignored (a member that died, or hung) and deleted by
the next member that records its own."""

from __future__ import annotations

import math
import os
import threading
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING

from sqlalchemy import delete, select

from . import schema as t
from .errors import StoreUnavailable, WriteLocked

if TYPE_CHECKING:
    from .store import Store

PREFIX = "ceiling:"
HEARTBEAT_S = 10.0
"""A member with partitions holding records records its ceiling this often (housekeeping, kafka/upkeep.py)."""
BEAT_WAIT_S = 0.1
"""How long a heartbeat waits for the database write lock: it runs in the consumer's main loop, whose lag refresh
and health must not stall behind another writer's transaction; a heartbeat not written is tried again a second
later (kafka/upkeep.py)."""
STOP_WAIT_S = 2.0
"""How long a clean stop waits in all for its row's deletion (lock, connection, statement): the row is ignored after
FRESH_S anyway and deleted by the next live member, so a stop never waits out a database that does not answer
(an SRE tryout's stop spent 20 s in two connect timeouts here, against a 30 s budget)."""
FRESH_S = 120.0
"""A ceiling whose heartbeat is older (or newer: clock skew between hosts) than this is ignored: a member that died
holds maintenance back for at most this long."""


def member_id() -> str:
    """A new member's key: pid and a random suffix (the pid alone repeats across containers and restarts)."""
    return f"{os.getpid()}-{uuid.uuid4().hex[:12]}"


def encode(ceiling: float, at: float) -> str:
    """'<ceiling> <heartbeat>' (repr: -inf before the member's first read, a float otherwise)."""
    return f"{ceiling!r} {at!r}"


def decode(value: str) -> tuple[float, float] | None:
    """(ceiling, heartbeat) of a stored row; None for one that cannot be read (ignored, and deleted as stale)."""
    try:
        ceiling, at = (float(x) for x in value.split())
    except ValueError:
        return None
    return None if math.isnan(ceiling) or not math.isfinite(at) else (ceiling, at)


def fresh(at: float, now: float) -> bool:
    return abs(now - at) <= FRESH_S


def lowest(rows: Mapping[str, str], now: float, exclude: str | None = None) -> float | None:
    """The lowest fresh ceiling among meta rows key → value (keys with PREFIX), None when none is fresh."""
    found = [c for key, value in rows.items() if key != PREFIX + (exclude or "")
             for c, at in [decode(value) or (math.inf, -math.inf)] if fresh(at, now)]
    return min(found, default=None)


def shared(store: "Store", now: float, exclude: str | None = None) -> float | None:
    """The lowest fresh ceiling recorded in the database (`exclude`: the caller's own member, which knows better)."""
    return lowest(store.meta_prefixed(PREFIX), now, exclude)


def record(store: "Store", member: str, ceiling: float, now: float, wait_s: float | None = None) -> None:
    """Record `member`'s ceiling with heartbeat `now` and delete the rows of members not heard from for FRESH_S
    (`wait_s`: for the write lock, default the store's lock timeout)."""
    with store.write(wait_s) as conn:  # read under the write lock: a row re-recorded meanwhile is not deleted
        rows = conn.execute(select(t.meta.c.key, t.meta.c.value).where(t.meta.c.key.startswith(PREFIX,
                                                                                               autoescape=True)))
        stale = [key for key, value in rows
                 if key != PREFIX + member and not fresh((decode(value or "") or (0.0, -math.inf))[1], now)]
        if stale:
            conn.execute(delete(t.meta).where(t.meta.c.key.in_(stale)))
        conn.execute(delete(t.meta).where(t.meta.c.key == PREFIX + member))
        conn.execute(t.meta.insert().values(key=PREFIX + member, value=encode(ceiling, now)))


def drop(store: "Store", member: str, wait_s: float | None = None) -> None:
    """Delete `member`'s row (a clean stop, or no partition holding records left: nothing to hold back)."""
    with store.write(wait_s) as conn:
        conn.execute(delete(t.meta).where(t.meta.c.key == PREFIX + member))


def drop_within(store: "Store", member: str, limit_s: float = STOP_WAIT_S) -> str | None:
    """Delete `member`'s row at a clean stop, waiting at most `limit_s` in all (half of it for the write lock, so
    a lock not obtained is reported as such): None once deleted, else why not (the deletion is abandoned to a
    daemon thread, which ends with the process)."""
    outcome: list[BaseException | None] = []

    def work() -> None:
        try:
            drop(store, member, limit_s / 2)
            outcome.append(None)
        except Exception as err:  # noqa: BLE001 - best effort at a stop: reported, never a thread's traceback
            outcome.append(err)

    worker = threading.Thread(target=work, name="driftline-ceiling-drop", daemon=True)
    worker.start()
    worker.join(limit_s)
    if not outcome:
        return f"the database did not answer within {limit_s:g}s"
    err = outcome[0]
    return None if err is None else str(err) if isinstance(err, (StoreUnavailable, WriteLocked)) else repr(err)
