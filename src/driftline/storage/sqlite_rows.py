"""The SQLite writes of a batch's join rows: multi-row INSERTs from flattened values bound as pysqlite binds them
cheapest, a column of one NULL, text or small int in every row written as a literal instead (literal_columns); the
outcome rows the batch's lookup found absent without a statement journal (FRESH_INSERT), the others upserted.
Split from bulk.py, which keeps the statements' columns and the PostgreSQL route."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from itertools import chain
from typing import Any

from sqlalchemy import Connection

from ..core.engine import PredRecord
from .pgcopy import split_stored
from .sqlite_binding import NULL

ROWS_PER_INSERT = 80
"""Rows per multi-row INSERT on SQLite (80 × 12 columns stays under the 999 bound parameters of old SQLite):
SQLite runs one statement per step of executemany, so a row then costs one bind call per value but no statement
step, reset and Python round of its own."""
FRESH_INSERT = "INSERT OR ROLLBACK INTO"
"""How SQLite inserts the outcome rows a batch's lookup found absent (issue 18). A multi-row statement that may abort
midway (ABORT, SQLite's default for a NOT NULL or key conflict) keeps a statement journal: every stored page it
changes is copied first, past 64 KiB into a temp file (two pwrite64 a page), and a new outcome row lands among
days-old ids, on a page of its own, so ~1 copy a row. Under OR ROLLBACK a conflict ends the transaction instead, so
SQLite keeps none. None can occur: the write lock is held from the lookup to the commit (should one all the same,
the batch's transaction fails, nothing written). The stored keys keep the upsert (its DO UPDATE keeps the journal)."""


def write(conn: Connection, table: str, columns: str, width: int, conflict: str,
          values: Callable[[list[Any]], list[Any]], rows: list[Any], key: Callable[[Any], Any],
          stored: frozenset[Any] | None, ints: tuple[int, ...] = ()) -> None:
    """`rows` into `table` (`values` flattens them, `width` values a row): those whose key is not in `stored` (the
    lookup's keys) by FRESH_INSERT, the others by the upsert `conflict`; all upserted without the lookup's keys."""
    fresh, held = ([], rows) if stored is None else split_stored(rows, key, stored)
    insert_many(conn, f"{FRESH_INSERT} {table} ({columns}) VALUES ", width, "", values(fresh), ints)
    insert_many(conn, f"INSERT INTO {table} ({columns}) VALUES ", width, conflict, values(held), ints)


def out_values(rows: list[tuple[Any, ...]]) -> list[Any]:
    """Outcome rows (prediction_id, label, ts, shard, matched) flattened, `matched` bound as an int."""
    flat = list(chain.from_iterable(rows))
    flat[4::5] = as_ints(flat[4::5])
    return flat


def sqlite_pred_values(records: Sequence[PredRecord]) -> list[Any]:
    """The values of pred_rows in key order, flattened, as SQLite binds them cheapest: booleans as the integers
    sqlite3 stores for them and NULLs as NaN (see sqlite_binding.NULL). Rows are sorted with their slice values
    still dicts: the key leads each row and is unique in a batch, so tuples never compare past it."""
    rows = [(r.prediction_id, r.model, r.variant, r.model_version, r.ts, r.score, r.flagged, r.shard, r.label,
             r.label_ts, r.implicit, r.slice_values) for r in records]  # _PRED_FIELDS of each record
    rows.sort()
    flat = list(chain.from_iterable(rows))
    flat[6::12] = as_ints(flat[6::12])
    flat[8::12] = nulls_bound(flat[8::12])
    flat[9::12] = nulls_bound(flat[9::12])
    flat[10::12] = as_ints(flat[10::12])
    slices = flat[11::12]
    if slices.count(None) == len(slices):  # no slice features (the common case): all NULL
        flat[11::12] = [NULL] * len(slices)
    else:
        flat[11::12] = [NULL if v is None else json.dumps(v) for v in slices]
    return flat


def as_ints(values: list[Any]) -> list[Any]:
    """Booleans as the integers sqlite3 binds for them (other values as they are): exact ints bind directly,
    while a bool takes pysqlite's adapter lookup (~1,300 instructions a value)."""
    return list(map(_BOOL_INT.get, values, values))


def nulls_bound(values: list[Any]) -> list[Any]:
    """None as sqlite_binding.NULL (other values as they are): bound as NULL without the adapter lookup."""
    return list(map(_NULL_FOR_NONE.get, values, values))


_BOOL_INT: dict[Any, Any] = {False: 0, True: 1}
_NULL_FOR_NONE: dict[Any, Any] = {None: NULL}


def insert_many(conn: Connection, head: str, width: int, tail: str, flat: list[Any], ints: tuple[int, ...] = ()
                ) -> None:
    """`head (?, ...) tail` for every row of `flat` (rows of `width` values, in key order), on SQLite: whole
    groups of ROWS_PER_INSERT rows as one multi-row statement each (one executemany), the rest one row per step
    (a second executemany). Key order (sorted by the callers): ~0.6 % fewer instructions in SQLite's B-tree
    inserts of a replay than the engine's order. A column of one value in every row is written as a literal
    (literal_columns; `ints`: the columns of INTEGER or NUMERIC affinity)."""
    literal = literal_columns(flat, width, ints)
    marks = ["?"] * width
    if literal:
        flat = flat[:]  # the caller's list stays whole
        for gone, c in enumerate(sorted(literal)):  # each column deleted in place (one C pass)
            del flat[c - gone::width - gone]
            marks[c] = literal[c]
        width -= len(literal)
    one = "(" + ", ".join(marks) + ")"
    n = len(flat) // width
    whole = (n - n % ROWS_PER_INSERT) * width
    if whole:
        step = ROWS_PER_INSERT * width
        conn.exec_driver_sql(head + ", ".join([one] * ROWS_PER_INSERT) + " " + tail,
                             [tuple(flat[i:i + step]) for i in range(0, whole, step)])
    if whole < len(flat):
        conn.exec_driver_sql(f"{head}{one} {tail}",
                             [tuple(flat[i:i + width]) for i in range(whole, len(flat), width)])


def literal_columns(flat: list[Any], width: int, ints: tuple[int, ...]) -> dict[int, str]:
    """The columns of `flat` (rows of `width` values) that hold one value in every row, as SQL literals: NULL (the
    NaN object bound for it, equal to nothing else), a printable str (a text literal is the text value a bound str
    is; equal to a str: a str or a subclass, bound as text), or a small int in a column of INTEGER or NUMERIC affinity
    (which stores any value equal to it, 0.0 or False for 0, as that integer). Issue 18: pysqlite binds every value
    with a C call of its own (~230 instructions a number, ~850 a text, which it copies); in a replay a batch's
    model, often its variant and version, its shard, its implicit flags and its slice values (NULL without slice
    features) rarely change. Never every column."""
    if len(flat) < 2 * width:
        return {}
    last = len(flat) - width
    found: dict[int, str] = {}
    for c in range(width):
        first = flat[c]
        if first is NULL and flat[last + c] is NULL and flat[c::width].count(NULL) * width == len(flat):
            found[c] = "NULL"
        elif (type(first) is str and first.isprintable() and flat[last + c] == first
              and flat[c::width].count(first) * width == len(flat)):
            found[c] = "'" + first.replace("'", "''") + "'"
        elif (c in ints and type(first) is int and -_SMALL < first < _SMALL and flat[last + c] == first
              and flat[c::width].count(first) * width == len(flat)):
            found[c] = str(first)
    if len(found) == width:
        del found[width - 1]
    return found


_SMALL = 1 << 31
"""Literal ints stay below this (an int pysqlite could not bind is bound, and refused, as before)."""
