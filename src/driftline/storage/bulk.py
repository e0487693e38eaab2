"""The ingestion hot path's SQL: join-state reads and writes (the bucket read-modify-write of a batch is in
bucket_writes, with the same conventions).

On PostgreSQL each is one statement over binary column arrays (`= ANY`, `unnest`); a statement per row costs a
server round of parse/bind/execute each. Writers are serialised by the write lock (locking.lock_postgres) that every
write transaction takes first, so the join lookups lock no rows (a row lock is a heap write and a WAL record per
row found: ~1/3 of the lookups' server CPU at 1 M events); rows are still read and written in key order. On SQLite
(one writer at a time) they are driver-level executemany calls, which bypass SQL compilation, of multi-row
statements, rows in key order (slightly cheaper B-tree inserts than the engine's order), their values bound as
pysqlite binds them without an adapter lookup (booleans as ints, NULL as NaN); a batch's lookup is one statement
(sqlite_lookup); the outcome rows the lookup found absent are inserted without a statement journal
(sqlite_rows.FRESH_INSERT).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from operator import attrgetter, itemgetter
from typing import Any

from sqlalchemy import Connection

from ..core.engine import JoinView, OutcomeRecord, PredKey, PredRecord, StoredKeys, label_in_force
from . import pgcopy, pgread, sqlite_lookup, sqlite_rows

CHUNK = 500
"""Keys per IN (...) list of the deletes on SQLite."""

PRED_COLS = ("prediction_id, model, variant, model_version, ts, score, flagged, shard, label, label_ts, implicit, "
             "slice_values")
_PRED_ARRAYS = ("%b::text[], %b::text[], %b::text[], %b::text[], %b::float8[], %b::float8[], %b::bool[], %b::int[], "
                "%b::smallint[], %b::float8[], %b::bool[], %b::text[]")
_PRED_CONFLICT = ("ON CONFLICT (prediction_id, model, variant) DO UPDATE SET label = excluded.label, "
                  "label_ts = excluded.label_ts, implicit = excluded.implicit")
_PRED_SELECT = sqlite_lookup.PRED_SELECT
"""PRED_COLS in PredRecord's field order (join lookups)."""
_OUT_COLS = "prediction_id, label, ts, shard, matched"
_OUT_ARRAYS = "%b::text[], %b::smallint[], %b::float8[], %b::int[], %b::bool[]"
_OUT_CONFLICT = "ON CONFLICT (prediction_id) DO UPDATE SET label = excluded.label, ts = excluded.ts, " \
                "matched = excluded.matched"
_PRED_INTS = (6, 7, 8, 10)
"""PRED_COLS of INTEGER or NUMERIC affinity (flagged, shard, label, implicit): see sqlite_rows.literal_columns."""
_OUT_INTS = (1, 3, 4)
"""_OUT_COLS of INTEGER or NUMERIC affinity (label, shard, matched)."""
_PRED_KEY = itemgetter(0, 1, 2)
"""A pred_rows row's key (PredKey)."""
_OUT_KEY = itemgetter(0)
"""An _out_rows row's key (its prediction id). Outcome rows are sorted by it: a batch holds one outcome per id
(EngineResult.outcomes), so the order is the rows' own, while timsort then compares strings directly instead of
tuples (equality of the ids first, then their order): the outcomes of stored predictions come in thousands of runs,
and a batch's sort took ~2.7x the instructions (issue 18)."""


def chunks(items: Sequence[Any], size: int = CHUNK) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def _marks(n: int) -> str:
    return ", ".join(["?"] * n)


def _columns(rows: Sequence[tuple[Any, ...]]) -> tuple[list[Any], ...]:
    return tuple(map(list, zip(*rows)))


_PRED_KINDS = ("text", "text", "text", "text", "float8", "float8", "bool", "int4", "int2", "float8", "bool", "text")
_OUT_KINDS = ("text", "int2", "float8", "int4", "bool")


def _pg_columns(conn: Connection, columns: Sequence[list[Any]], kinds: Sequence[str]) -> tuple[Any, ...]:
    """Columns for `%b::type[]` parameters, each pre-encoded as a binary array where pgarrays can (psycopg dumps
    the rest); the connection learns the encoded arrays first (idempotent)."""
    from . import pgarrays  # PostgreSQL only: SQLite runs never import psycopg

    dbapi = conn.connection.driver_connection
    pgarrays.register(dbapi)
    utf8 = dbapi.info.encoding == "utf-8"  # type: ignore[union-attr]
    return tuple(pgarrays.encode(col, kind, utf8) for col, kind in zip(columns, kinds))


def load_join(conn: Connection, dialect: str, ids: Iterable[str]) -> JoinView:
    """Predictions and outcomes stored for these prediction ids (any iterable, read once) in the caller's write
    transaction."""
    view = JoinView()
    if dialect != "postgresql":
        # the ids sorted (index pages read in key order), listed in first-seen order: a batch's ids mostly come in
        # ascending runs, which sorted() merges with fewer compares than the hash order of a set
        sqlite_lookup.lookup(conn, sorted(dict.fromkeys(ids)), view)
        found = frozenset([(r.prediction_id, r.model, r.variant) for recs in view.preds.values() for r in recs])
        in_force(view)
        view.stored = StoredKeys(found, frozenset(view.outcomes))  # the writes insert the others without a
        return view  # statement journal (sqlite_rows)
    distinct = set(ids)
    if not distinct:
        return view
    preds, outcomes = view.preds, view.outcomes
    # the ids in any order: the server returns the rows in key order (ORDER BY), and they lock nothing, so sorting
    # them here (~7 ms of CPU per 30,000-event batch) bought nothing
    params = _pg_columns(conn, [list(distinct)], ("text",))
    # the driver's tuples in binary format (pgread): SQLAlchemy's Row objects cost ~0.6 us a row, ~2,600 a batch;
    # both lookups in one round trip (a pipeline)
    pred_rows_, out_rows_ = pgread.fetch_binary_all(conn, [(PG_PRED_LOOKUP, params), (PG_OUT_LOOKUP, params)])
    for rec in pred_records(pred_rows_):
        if (recs := preds.get(rec.prediction_id)) is None:
            preds[rec.prediction_id] = [rec]
        else:
            recs.append(rec)
    outcomes.update([(p, OutcomeRecord(p, lb, ts, sh, bool(m))) for p, lb, ts, sh, m in out_rows_])
    in_force(view)
    # the writes copy the other rows (pgcopy)
    view.stored = StoredKeys(frozenset(r.key for recs in preds.values() for r in recs), frozenset(outcomes))
    return view


def in_force(view: JoinView) -> None:
    """The loaded predictions with the label in force: an outcome row held for their id overrides their row's own
    label columns, which are not rewritten when an outcome arrives for a stored prediction (issue 18)."""
    preds = view.preds
    for pid, out in view.outcomes.items():
        for rec in preds.get(pid, ()):
            label_in_force(rec, out)


PG_PRED_LOOKUP = (f"SELECT {_PRED_SELECT} FROM predictions WHERE prediction_id = ANY(%b::text[]) "
                  "ORDER BY prediction_id, model, variant")
PG_OUT_LOOKUP = f"SELECT {_OUT_COLS} FROM outcomes WHERE prediction_id = ANY(%b::text[]) ORDER BY prediction_id"
"""The PostgreSQL join lookups of a batch's distinct ids, rows in key order. No `FOR UPDATE`: the batch's
transaction holds the write lock from before these reads to its commit, and every driftline transaction that writes
join rows takes it first (Store.write), so no other writer can change or add these rows meanwhile; the row locks
only cost the server a tuple write and a WAL record per row found (issue 18: the lookup of a 30,000-event batch on
a 1 M-event store 84-99 -> 55-58 ms of server CPU)."""


def pred_records(rows: Sequence[Sequence[Any]]) -> list[PredRecord]:
    """PredRecords from rows in _PRED_SELECT (PredRecord field) order, unpacked rather than indexed."""
    return [PredRecord(p, m, mv, v, ts, sc, bool(fl), sh, lb, lts, bool(imp), None if sv is None else json.loads(sv))
            for p, m, mv, v, ts, sc, fl, sh, lb, lts, imp, sv in rows]


def write_predictions(conn: Connection, dialect: str, records: Sequence[PredRecord],
                      stored: frozenset[PredKey] | None = None) -> None:
    """Insert new join rows and update matured ones (implicit negatives). On PostgreSQL, with the keys the batch's lookup found
    stored, the others are copied as new rows (pgcopy) and only the stored ones upserted."""
    if not records:
        return
    if dialect == "postgresql":
        rows = pred_rows(records)
        rows.sort()  # key order: concurrent writers lock rows in the same order
        if stored is not None:
            rows = _copied(conn, "predictions", PRED_COLS, _PRED_KINDS, rows, lambda r: r[:3] in stored)
        upsert_predictions(conn, rows)
    else:  # all upserted: a batch's new predictions are ids of its own, on few pages (few journal copies), and
        # splitting them off cost more than it spared (+438 instructions per event, replay_callgrind.py)
        sqlite_rows.insert_many(conn, f"INSERT INTO predictions ({PRED_COLS}) VALUES ", 12, _PRED_CONFLICT,
                                sqlite_rows.sqlite_pred_values(records), _PRED_INTS)


def upsert_predictions(conn: Connection, rows: list[tuple[Any, ...]]) -> None:
    """PostgreSQL: insert or relabel join rows (pred_rows, in key order) in one statement."""
    if rows:
        conn.exec_driver_sql(f"INSERT INTO predictions ({PRED_COLS}) SELECT * FROM unnest({_PRED_ARRAYS}) "
                             + _PRED_CONFLICT, _pg_columns(conn, _columns(rows), _PRED_KINDS))


def write_outcomes(conn: Connection, dialect: str, outcomes: Sequence[OutcomeRecord],
                   stored: frozenset[str] | None = None) -> None:
    """Insert or replace the outcome in force per prediction id (`stored`: as in write_predictions; on SQLite the
    others are inserted without a statement journal, sqlite_rows.FRESH_INSERT)."""
    if not outcomes:
        return
    rows = _out_rows(outcomes)
    rows.sort(key=_OUT_KEY)  # key order (PostgreSQL: concurrent writers lock rows in the same order); see _OUT_KEY
    if dialect == "postgresql":
        if stored is not None:
            rows = _copied(conn, "outcomes", _OUT_COLS, _OUT_KINDS, rows, lambda r: r[0] in stored)
        upsert_outcomes(conn, rows)
    else:
        sqlite_rows.write(conn, "outcomes", _OUT_COLS, 5, _OUT_CONFLICT, sqlite_rows.out_values, rows, _OUT_KEY,
                          stored, _OUT_INTS)


def upsert_outcomes(conn: Connection, rows: list[tuple[Any, ...]]) -> None:
    """PostgreSQL: insert or replace outcome rows (_out_rows, in key order) in one statement."""
    if rows:
        conn.exec_driver_sql(f"INSERT INTO outcomes ({_OUT_COLS}) SELECT * FROM unnest({_OUT_ARRAYS}) "
                             + _OUT_CONFLICT, _pg_columns(conn, _columns(rows), _OUT_KINDS))


def _copied(conn: Connection, table: str, columns: str, kinds: Sequence[str], rows: list[tuple[Any, ...]],
            is_stored: Callable[[tuple[Any, ...]], bool]) -> list[tuple[Any, ...]]:
    """COPY the rows whose key is not stored into `table`; the rows left to upsert (all of them if the copy
    found a key stored after all)."""
    fresh = [r for r in rows if not is_stored(r)]
    if fresh and pgcopy.copy_rows(conn, table, columns, kinds, fresh):
        return [r for r in rows if is_stored(r)]
    return rows


def copy_new_join_rows(conn: Connection, records: Sequence[PredRecord], outcomes: Sequence[OutcomeRecord],
                       stored: StoredKeys) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """PostgreSQL: COPY a batch's new predictions and outcomes (keys not in `stored`, which the batch's lookup
    found) under one savepoint (pgcopy.copy_tables); the (prediction, outcome) rows left to upsert, in key order:
    the stored ones, or all of them when a copied key was stored after all (nothing copied then)."""
    preds = pred_rows(records)
    preds.sort()  # key order, as the rows have always gone in (the heap's order is what unordered scans return)
    outs = _out_rows(outcomes)
    outs.sort(key=_OUT_KEY)
    fresh_preds, stored_preds = pgcopy.split_stored(preds, _PRED_KEY, stored.preds)
    fresh_outs, stored_outs = pgcopy.split_stored(outs, _OUT_KEY, stored.outcomes)
    copies = [(table, columns, kinds, rows) for table, columns, kinds, rows in (
        ("predictions", PRED_COLS, _PRED_KINDS, fresh_preds), ("outcomes", _OUT_COLS, _OUT_KINDS, fresh_outs)) if rows]
    if copies and pgcopy.copy_tables(conn, copies):
        return stored_preds, stored_outs
    return preds, outs


def _out_rows(outcomes: Sequence[OutcomeRecord]) -> list[tuple[Any, ...]]:
    """_OUT_FIELDS of each outcome. Here and in sqlite_pred_values a comprehension reads the fields: CPython 3.11
    specialises its attribute reads of the one record class (~30 % faster than attrgetter over 60,000 records)."""
    return [(o.prediction_id, o.label, o.ts, o.shard, o.matched) for o in outcomes]


_PRED_FIELDS = attrgetter("prediction_id", "model", "variant", "model_version", "ts", "score", "flagged", "shard",
                          "label", "label_ts", "implicit", "slice_values")
_OUT_FIELDS = attrgetter("prediction_id", "label", "ts", "shard", "matched")


def pred_tuple(r: PredRecord) -> tuple[Any, ...]:
    """A join row in PRED_COLS order."""
    return (r.prediction_id, r.model, r.variant, r.model_version, r.ts, r.score, r.flagged, r.shard, r.label,
            r.label_ts, r.implicit, None if r.slice_values is None else json.dumps(r.slice_values))


def pred_rows(records: Sequence[PredRecord]) -> list[tuple[Any, ...]]:
    """`pred_tuple` of each record, read by one C attribute getter per record (slice values still as JSON)."""
    return [row if row[11] is None else (*row[:11], json.dumps(row[11])) for row in map(_PRED_FIELDS, records)]


def pred_record(r: Sequence[Any]) -> PredRecord:
    """A PredRecord from a full predictions row, its first twelve columns in the table's order (PRED_COLS), read by
    position: a SQLAlchemy Row's attribute lookups cost ~0.7 µs each, more than the rest of a maintenance pass's
    work on the row (every stored prediction is read once as it expires)."""
    pid, model, variant, version, ts, score, flagged, shard, label, label_ts, implicit, slices = r[:12]
    return PredRecord(pid, model, version, variant, ts, score, bool(flagged), shard, label, label_ts, bool(implicit),
                      None if slices is None else json.loads(slices))
