"""The compare-and-set of stored positions (Store._guard_positions) on PostgreSQL as one statement for all the
batch's partitions: a round trip for the fence instead of an UPDATE per partition (plus an INSERT and a SELECT for
each partition the UPDATE missed). The same moves and the same stale answer as the per-partition statements: a
position moves only from the expected offset, a missing row counts as 0 (inserted then), and every other partition
is reported with its stored offset (None: no row), read in the same statement.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection

from .errors import StalePositions

GUARD = (
    "WITH e(source, partition, start, next) AS (SELECT * FROM unnest(%s::text[], %s::int4[], %s::int8[], %s::int8[])), "
    "moved AS (UPDATE positions p SET next_offset = e.next FROM e WHERE p.source = e.source "
    "AND p.partition = e.partition AND p.next_offset = e.start RETURNING p.source, p.partition), "
    "added AS (INSERT INTO positions (source, partition, next_offset) SELECT source, partition, next FROM e "
    "WHERE start = 0 ON CONFLICT (source, partition) DO NOTHING RETURNING source, partition) "
    "SELECT e.source, e.partition, e.start, (SELECT q.next_offset FROM positions q WHERE q.source = e.source "
    "AND q.partition = e.partition) FROM e WHERE NOT EXISTS (SELECT 1 FROM moved m WHERE m.source = e.source "
    "AND m.partition = e.partition) AND NOT EXISTS (SELECT 1 FROM added a WHERE a.source = e.source "
    "AND a.partition = e.partition)")
"""Moves each (source, partition) from `start` to `next` where it is stored at `start` (or inserts it when `start` is
0 and no row exists: a row at 0 is moved by the UPDATE, and the INSERT then meets it and does nothing); returns the
others with their stored offset, read from the statement's snapshot, which this statement did not change for them."""


def guard(conn: Connection, moves: list[tuple[str, int, int, int]]) -> dict[tuple[str, int], tuple[int, int | None]]:
    """Apply (source, partition, expected start, new next offset) moves; the stale ones → (start, stored or None)."""
    if not moves:
        return {}
    return stale_of(conn.exec_driver_sql(GUARD, params(moves)).fetchall())


def params(moves: list[tuple[str, int, int, int]]) -> tuple[list[Any], ...]:
    """GUARD's parameters for these moves (not empty): sources, partitions, starts, next offsets."""
    return tuple(list(c) for c in zip(*moves))


def stale_of(rows: Sequence[Sequence[Any]]) -> dict[tuple[str, int], tuple[int, int | None]]:
    """GUARD's rows as guard returns them: the stale moves → (start, stored or None)."""
    return {(s, int(p)): (int(start), None if stored is None else int(stored)) for s, p, start, stored in rows}


def pending(moves: list[tuple[str, int, int, int]]) -> tuple[str, tuple[list[Any], ...], Any]:
    """guard for these moves (not empty) as (statement, params, check) for a caller that sends it with its next
    read (bucket_writes.merge_buckets: one round trip for both); check raises StalePositions when a move was stale."""
    return GUARD, params(moves), _raise_stale


def _raise_stale(rows: Sequence[Sequence[Any]]) -> None:
    if rows:
        raise StalePositions(stale_of(rows))
