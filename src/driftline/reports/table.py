"""The `reports` table (migration 0005): one stored report per (model, ISO week).

`save(..., replace=True)` (the `driftline report` command) overwrites the stored report of that week, since
labels keep maturing and the newest rendering is the one to keep; `replace=False` (the scheduler) inserts only
when the week has no report yet, so a restart, a catch-up run or a second replica never writes it twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Boolean, Column, Float, MetaData, String, Table, Text, and_, select
from sqlalchemy.dialects import postgresql, sqlite

from ..storage.store import Store

metadata = MetaData()

reports = Table(
    "reports", metadata,
    Column("model", String(200), primary_key=True),
    Column("week", String(10), primary_key=True),
    Column("window_start", Float, nullable=False),
    Column("window_end", Float, nullable=False),
    Column("generated_at", Float, nullable=False),
    Column("provisional", Boolean, nullable=False),
    Column("source", String(32), nullable=False),
    Column("doc", Text, nullable=False),
    Column("html", Text, nullable=False),
    Column("markdown", Text, nullable=False),
)


@dataclass(frozen=True, slots=True)
class StoredReport:
    """One stored report with its three renderings."""

    model: str
    week: str
    window_start: float
    window_end: float
    generated_at: float
    provisional: bool
    source: str
    doc: str
    html: str
    markdown: str

    def summary(self) -> dict[str, Any]:
        """The report's key without its (large) bodies."""
        return {"model": self.model, "week": self.week, "window_start": self.window_start,
                "window_end": self.window_end, "generated_at": self.generated_at,
                "provisional": self.provisional, "source": self.source}


def save(store: Store, r: StoredReport, replace: bool = True) -> bool:
    """Store a report; with replace=False an existing (model, week) row is kept. True when a row was written."""
    insert = sqlite.insert if store.dialect == "sqlite" else postgresql.insert
    row = {"model": r.model, "week": r.week, "window_start": r.window_start, "window_end": r.window_end,
           "generated_at": r.generated_at, "provisional": r.provisional, "source": r.source, "doc": r.doc,
           "html": r.html, "markdown": r.markdown}
    stmt = insert(reports).values(**row)
    if replace:
        stmt = stmt.on_conflict_do_update(index_elements=["model", "week"],
                                          set_={k: stmt.excluded[k] for k in row if k not in ("model", "week")})
    else:
        stmt = stmt.on_conflict_do_nothing(index_elements=["model", "week"])
    with store.write() as conn:
        return bool(conn.execute(stmt).rowcount)


def exists(store: Store, model: str, week: str) -> bool:
    """True when a report of this model and ISO week is stored."""
    c = reports.c
    with store.read() as conn:
        return conn.execute(select(c.week).where(and_(c.model == model, c.week == week))).first() is not None


def load(store: Store, model: str, week: str) -> StoredReport | None:
    """The stored report of a model and ISO week, or None."""
    c = reports.c
    with store.read() as conn:
        r = conn.execute(select(reports).where(and_(c.model == model, c.week == week))).first()
    return None if r is None else StoredReport(**{k: r._mapping[k] for k in reports.c.keys()})


def listing(store: Store, model: str | None = None) -> list[dict[str, Any]]:
    """Stored reports (without bodies), newest week first."""
    c = reports.c
    q = select(c.model, c.week, c.window_start, c.window_end, c.generated_at, c.provisional, c.source) \
        .order_by(c.window_start.desc(), c.model)
    if model is not None:
        q = q.where(c.model == model)
    with store.read() as conn:
        return [dict(r._mapping) for r in conn.execute(q)]
