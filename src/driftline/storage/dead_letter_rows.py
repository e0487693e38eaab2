"""Reading stored dead letters back out whole (`dead-letters --raw`), streamed so a large table is never in memory."""

from __future__ import annotations

from collections.abc import Iterator

from sqlalchemy import select

from . import schema as t
from .store import Store


def payloads(store: Store, reason: str) -> Iterator[bytes]:
    """The stored raw payloads of one reason's dead letters, oldest first."""
    q = select(t.dead_letters.c.raw).where(t.dead_letters.c.reason == reason).order_by(t.dead_letters.c.id)
    with store.read() as conn:
        for row in conn.execution_options(yield_per=1000).execute(q):
            yield bytes(row.raw)
