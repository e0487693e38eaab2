"""Reads of the ingestion hot path whose rows come back in PostgreSQL's binary format: a bucket's stored blob is
sent as its bytes rather than as hex text that the server encodes and psycopg decodes (reading 512 stored buckets:
server CPU 9.7 -> 6.0 ms, wall 32 -> 18 ms on the loaded 2-core machine). The values are the same Python objects
either way (bytes, str, int). SQLAlchemy's cursors ask for text results, so the statement runs on a driver cursor,
recorded like any statement (reported when it stalls, broken off once stopping) and its driver errors raised as
SQLAlchemy's, as pgcopy does.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError

from .calls import driver_step


PIPELINE_EXIT_ECHO = "error ignored terminating"
"""How psycopg's warning opens when leaving a pipeline fails after an error inside it (a session the server ended):
the error inside is raised and reported by driftline, so the echo is the same event a second time."""


class PipelineExitEcho(logging.Filter):
    """Demotes psycopg's pipeline-exit echo of an error already raised to DEBUG (dropped unless DEBUG is on)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.DEBUG and str(record.msg).startswith(PIPELINE_EXIT_ECHO):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return logging.getLogger().isEnabledFor(logging.DEBUG)
        return True


def quiet_pipeline_exit_echo() -> None:
    """Install PipelineExitEcho on psycopg's logger once (on-call tryout: a session terminated during a pipelined
    read logged psycopg's echo beside driftline's own line)."""
    logger = logging.getLogger("psycopg")
    if not any(isinstance(f, PipelineExitEcho) for f in logger.filters):
        logger.addFilter(PipelineExitEcho())


def fetch_binary(conn: Connection, statement: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    """Every row of `statement` (psycopg placeholders) run in the caller's transaction, fetched in binary format."""
    import psycopg  # PostgreSQL only: SQLite runs never import psycopg

    dbapi = conn.connection.driver_connection
    try:
        with driver_step(conn, "a statement"), dbapi.cursor(binary=True) as cur:  # type: ignore[union-attr]
            cur.execute(statement, params)
            return cur.fetchall()
    except psycopg.Error as err:
        raise DBAPIError.instance(statement, None, err, psycopg.Error, dialect=conn.dialect) from err


def fetch_binary_all(conn: Connection, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[list[tuple[Any, ...]]]:
    """fetch_binary of each (statement, params), sent together in one psycopg pipeline: one round trip for a batch's
    two join lookups instead of one each (the server runs them in order, in the caller's transaction, as before)."""
    import psycopg  # PostgreSQL only: SQLite runs never import psycopg

    dbapi: Any = conn.connection.driver_connection
    # a server error comes at the sync or at any later execute (psycopg reads results as they arrive), so it may be
    # any statement's: all are quoted (tryout: the fence's failure quoted the bucket read sent after it; a loaded
    # test run: a first statement's error raised at the second's execute quoted only the second)
    statement = ";\n".join(s for s, _ in statements)
    try:
        with driver_step(conn, "a statement"):
            cursors = [dbapi.cursor(binary=True) for _ in statements]
            try:
                with dbapi.pipeline():  # leaving it syncs: every result is read before the rows are fetched
                    for cur, (sql, params) in zip(cursors, statements):
                        cur.execute(sql, params)
                return [cur.fetchall() for cur in cursors]
            finally:
                for cur in cursors:
                    cur.close()
    except psycopg.Error as err:
        raise DBAPIError.instance(statement, None, err, psycopg.Error, dialect=conn.dialect) from err
