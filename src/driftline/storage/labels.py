"""The admitted label values (see driftline.core.labels): loaded and extended inside the batch's transaction."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, select

from . import schema as t
from ..core.labels import Admitted


def load(conn: Connection) -> Admitted:
    """Every admitted model, variant and version."""
    return from_rows(conn.execute(select(t.admitted_labels.c.model, t.admitted_labels.c.kind,
                                         t.admitted_labels.c.value)))


def from_rows(rows: Iterable[Sequence[str]]) -> Admitted:
    """Admitted values from (model, kind, value) rows (load's, or a pipelined read's: Store.batch_start_in)."""
    out = Admitted()
    for model, kind, value in rows:
        out.add(model, kind, value)
    return out


def admit(conn: Connection, insert: Callable[[Any], Any], rows: Sequence[tuple[str, str, str]], now: float) -> None:
    """Store newly admitted values; a value another writer admitted meanwhile is left as it is."""
    if not rows:
        return
    stmt = insert(t.admitted_labels).on_conflict_do_nothing(index_elements=["model", "kind", "value"])
    conn.execute(stmt, [{"model": m, "kind": k, "value": v, "admitted_at": now} for m, k, v in sorted(rows)])


def listing(conn: Connection) -> list[tuple[str, str, str]]:
    """(model, kind, value) of every admitted value, sorted."""
    c = t.admitted_labels.c
    return [(r.model, r.kind, r.value) for r in conn.execute(select(c.model, c.kind, c.value)
                                                              .order_by(c.model, c.kind, c.value))]
