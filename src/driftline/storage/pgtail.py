"""The end of a batch's write on PostgreSQL: counters added, newest times raised, positions and meta upserted, as one
statement each over column arrays (unnest), all sent in one psycopg pipeline: one round trip for the four instead
of four executemany calls, each a round trip with a bind and execute per row. The statements and the rows they
leave are those of the SQLAlchemy upserts they replace (Store._add_counters, _raise_newest, _upsert). Recorded like
any statement (reported when it stalls, broken off once stopping); driver errors raised as SQLAlchemy's, as pgcopy
does (a value refused: DataError, a lost connection: OperationalError).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError

from .calls import driver_step

ADD_COUNTERS = ("INSERT INTO counters (name, label, value) SELECT * FROM unnest(%b::text[], %b::text[], %b::int8[]) "
                "ON CONFLICT (name, label) DO UPDATE SET value = counters.value + excluded.value")
RAISE_NEWEST = ("INSERT INTO counters (name, label, value) SELECT * FROM unnest(%b::text[], %b::text[], %b::int8[]) "
                "ON CONFLICT (name, label) DO UPDATE SET value = CASE WHEN excluded.value > counters.value "
                "THEN excluded.value ELSE counters.value END")
SET_POSITIONS = ("INSERT INTO positions (source, partition, next_offset) SELECT * FROM unnest(%b::text[], %b::int4[], "
                 "%b::int8[]) ON CONFLICT (source, partition) DO UPDATE SET next_offset = excluded.next_offset")
SET_META = ("INSERT INTO meta (key, value) SELECT * FROM unnest(%b::text[], %b::text[]) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value")
_KINDS = {ADD_COUNTERS: ("text", "text", "int8"), RAISE_NEWEST: ("text", "text", "int8"),
          SET_POSITIONS: ("text", "int4", "int8"), SET_META: ("text", "text")}


def write(conn: Connection, counters: Sequence[tuple[str, str, int]], newest: Sequence[tuple[str, str, int]],
          positions: Sequence[tuple[str, int, int]], meta: Sequence[tuple[str, str]]) -> None:
    """Run the statements that have rows (rows as tuples in column order, in the order given) in the caller's
    transaction, pipelined."""
    import psycopg  # PostgreSQL only: SQLite runs never import psycopg

    from .bulk import _pg_columns

    todo = [(sql, rows) for sql, rows in ((ADD_COUNTERS, counters), (RAISE_NEWEST, newest),
                                          (SET_POSITIONS, positions), (SET_META, meta)) if rows]
    if not todo:
        return
    params = [(sql, _pg_columns(conn, list(map(list, zip(*rows))), _KINDS[sql])) for sql, rows in todo]
    dbapi: Any = conn.connection.driver_connection
    statement = todo[0][0]
    try:
        with driver_step(conn, "a statement"):
            if len(params) == 1:
                with dbapi.cursor() as cur:
                    cur.execute(statement, params[0][1])
                return
            with dbapi.cursor() as cur, dbapi.pipeline():  # the pipeline's results are read before the cursor closes
                for statement, values in params:
                    cur.execute(statement, values)
    except psycopg.Error as err:
        raise DBAPIError.instance(statement, None, err, psycopg.Error, dialect=conn.dialect) from err
