"""The fence of stored positions on PostgreSQL as one statement for all partitions (storage/pgfence.py): the same
moves, the same StalePositions (expected and stored offsets, None for no row) and nothing written on a stale one,
as SQLite's per-partition compare-and-set."""

from __future__ import annotations

from sqlalchemy import event, text

from driftline.core.engine import EngineResult
from driftline.storage.errors import StalePositions
from driftline.storage.store import Store

from pg_wire_count import WireCounter

Moves = dict[tuple[str, int], tuple[int, int]]
STEPS: list[Moves] = [
    {("kafka:a", 0): (0, 5)},  # no row: 0 expected, inserted
    {("kafka:a", 0): (5, 9), ("kafka:a", 1): (0, 4), ("kafka:b", 0): (0, 0)},  # moved, inserted, inserted at 0
    {("kafka:b", 0): (0, 3)},  # a row at 0: moved by the update, not inserted again
    {("kafka:a", 0): (7, 12)},  # stored 9: stale
    {("kafka:a", 1): (4, 6), ("kafka:c", 2): (3, 8), ("kafka:b", 0): (3, 4)},  # no row, 3 expected: stale; the rest
    {("kafka:a", 1): (4, 6), ("kafka:b", 0): (3, 4)},  # rolled back above, so they move now
    {("kafka:a", 0): (9, 9), ("kafka:a", 1): (6, 7)},  # a partition that does not move
]


def _run(store: Store) -> list[object]:
    """The steps through advance_positions, then again from no rows through fenced commit_batch calls: each
    step's outcome and the positions stored after it."""
    out: list[object] = []
    for how in ("advance", "batch"):
        with store.write() as conn:
            conn.execute(text("DELETE FROM positions"))
        for moves in STEPS:
            try:
                if how == "advance":
                    store.advance_positions(moves)
                else:
                    with store.write() as conn:
                        store.commit_batch(conn, EngineResult(), [], {k: to for k, (_, to) in moves.items()},
                                           expected_positions={k: start for k, (start, _) in moves.items()})
                out.append((how, "ok"))
            except StalePositions as err:
                out.append((how, err.stale, str(err)))
            with store.read() as conn:
                out.append(sorted(tuple(r) for r in conn.execute(text(
                    "SELECT source, partition, next_offset FROM positions"))))
    return out


def _store(url: str) -> Store:
    s = Store(url)
    s.migrate()
    return s


def test_the_fence_is_one_statement_and_answers_as_the_per_partition_one(pg_database, tmp_path):
    counter = WireCounter("127.0.0.1", 5432)  # a batch's fence runs on a driver cursor (with its first bucket read)
    pg = _store(f"postgresql+psycopg://postgres@127.0.0.1:{counter.port}/{pg_database.name}?sslmode=disable")
    statements: list[str] = []
    event.listen(pg.engine, "before_cursor_execute",
                 lambda conn, cur, statement, *rest: statements.append(statement) if "positions" in statement else None)
    counter.reset()
    got = _run(pg)
    sent = [s.split("| ", 1)[1] for s in counter.reset().texts]
    counter.close()
    lite = _store(f"sqlite:///{tmp_path / 'ref.db'}")
    assert got == _run(lite)
    fences = [s for s in sent if s.startswith("WITH e(source")]
    assert len(fences) == 2 * len(STEPS)  # one statement per fence, whatever the partitions
    assert not [s for s in statements if s.startswith(("UPDATE positions SET next_offset=", "INSERT INTO positions"))]
    stale = [o for o in got if isinstance(o, tuple) and len(o) == 3]
    assert [o[1] for o in stale] == [{("kafka:a", 0): (7, 9)}, {("kafka:c", 2): (3, None)}] * 2
    assert got[-1] == [("kafka:a", 0, 9), ("kafka:a", 1, 7), ("kafka:b", 0, 4)]
    pg.close()
    lite.close()
