"""Cheaper parameter binding for SQLite: bool and None values bound as what sqlite3 stores anyway.

pysqlite binds exact int, float, str and bytes directly, but for every other value (a join row's `flagged`,
`implicit`, `matched` booleans and its NULL label columns) it first looks for an adapter, failing twice with a
formatted AttributeError (~3,000 instructions a value: ~7 % of a replay). Registered adapters make that a dict hit.
What is stored does not change: a bool is bound as the integer it is, None as NULL. sqlite3 keeps adapters
module-wide; registering the same two is idempotent and changes nothing else a process binds.
"""

from __future__ import annotations

import math
from contextlib import closing
import sqlite3

_AS_NULL = {}.get
"""A C-level callable giving None for any value (the adapter of None: bound as NULL, as without it)."""


def _nan_binds_null() -> bool:
    """Whether this SQLite binds a float NaN as NULL (it does: sqlite3VdbeMemSetDouble stores no NaN)."""
    with closing(sqlite3.connect(":memory:")) as db:
        return db.execute("SELECT ? IS NULL", (math.nan,)).fetchone()[0] == 1


NULL: float | None = math.nan if _nan_binds_null() else None
"""What the join-row writers bind for NULL: a float NaN, which pysqlite binds directly (an exact float) and SQLite
stores as NULL, instead of None, which takes the adapter lookup (~1,300 instructions a value); None where an
SQLite would store NaN otherwise (checked once at import)."""


def register_adapters() -> None:
    """Bind bool as int and None as NULL without pysqlite's failing adapter lookups (idempotent)."""
    sqlite3.register_adapter(bool, int)
    sqlite3.register_adapter(type(None), _AS_NULL)


__all__ = ["NULL", "register_adapters"]
