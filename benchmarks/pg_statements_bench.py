"""Which statements a `replay` into PostgreSQL spends the server's time on: every driver call (execute, executemany,
COPY, commit) timed by wall clock and by the CPU its backend used meanwhile (/proc/<pid>/schedstat, nanoseconds, so
the server must run on this host), summed per statement text and listed by server CPU per batch. For when
pg_stat_statements is not loaded (it needs shared_preload_libraries and a server restart).

Usage: python benchmarks/pg_statements_bench.py [--pg URL] [--batch N] [--top N]
(--pg: a libpq URL of a maintenance database; a fresh database is created and dropped.) Compare two commits by
running it with PYTHONPATH pointing at each one's src/.
"""

from __future__ import annotations

import argparse
import os
import re
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from bench_common import count_lines, scratch_pg_database, simulated_stream
from driftline.ingest.replay import BATCH


def backend_ns(pid: int) -> int:
    """CPU nanoseconds the backend `pid` has run so far."""
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0])


class Profile:
    """Server CPU, wall time and calls per statement text."""

    def __init__(self) -> None:
        self.server: dict[str, float] = defaultdict(float)
        self.wall: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.in_pipeline = False
        self.busy = False

    def add(self, key: str, server_ns: int, wall_s: float) -> None:
        self.server[key] += server_ns / 1e6
        self.wall[key] += wall_s * 1000
        self.calls[key] += 1


def statement_key(statement: Any) -> str:
    text = statement.decode() if isinstance(statement, bytes) else str(statement)
    text = re.sub(r"\s+", " ", text).strip()
    return text[:150]


# a pipeline's calls are summed as one: "(pipeline) " and the first 40 characters of each statement queued


def install(profile: Profile) -> None:
    """Wrap psycopg's cursor execute/executemany/copy and connection commit to record each call."""

    def timed(owner: Any, name: str, key_of: Any) -> None:
        inner = getattr(owner, name)

        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            if profile.in_pipeline or profile.busy:  # counted with its pipeline or its executemany
                return inner(self, *args, **kwargs)
            conn = self if isinstance(self, psycopg.Connection) else self.connection
            pid = conn.info.backend_pid
            s, t = backend_ns(pid), time.perf_counter()
            profile.busy = True
            try:
                return inner(self, *args, **kwargs)
            finally:
                profile.busy = False
                profile.add(key_of(args), backend_ns(pid) - s, time.perf_counter() - t)

        setattr(owner, name, wrapper)

    timed(psycopg.Cursor, "execute", lambda a: statement_key(a[0]))
    timed(psycopg.Cursor, "executemany", lambda a: "(many) " + statement_key(a[0]))
    timed(psycopg.Connection, "commit", lambda a: "COMMIT")
    copy = psycopg.Cursor.copy

    @contextmanager
    def copy_wrapper(self: Any, statement: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
        pid = self.connection.info.backend_pid
        s, t = backend_ns(pid), time.perf_counter()
        try:
            with copy(self, statement, *args, **kwargs) as c:
                yield c
        finally:
            profile.add(statement_key(statement), backend_ns(pid) - s, time.perf_counter() - t)

    psycopg.Cursor.copy = copy_wrapper  # type: ignore[method-assign]
    pipeline = psycopg.Connection.pipeline

    @contextmanager
    def pipeline_wrapper(self: Any) -> Iterator[Any]:
        if profile.busy or profile.in_pipeline:  # executemany's own pipeline: counted as the executemany
            with pipeline(self) as p:
                yield p
            return
        pid = self.info.backend_pid
        s, t = backend_ns(pid), time.perf_counter()
        sent: list[str] = []
        execute = psycopg.Cursor.execute

        def queued(cur: Any, statement: Any, *args: Any, **kwargs: Any) -> Any:
            sent.append(statement_key(statement)[:40])
            return execute(cur, statement, *args, **kwargs)

        profile.in_pipeline = True
        psycopg.Cursor.execute = queued  # type: ignore[method-assign]
        try:
            with pipeline(self) as p:
                yield p
        finally:
            profile.in_pipeline = False
            psycopg.Cursor.execute = execute  # type: ignore[method-assign]
            profile.add("(pipeline) " + " | ".join(sent), backend_ns(pid) - s, time.perf_counter() - t)

    psycopg.Connection.pipeline = pipeline_wrapper  # type: ignore[method-assign]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pg", default=os.environ.get("DRIFTLINE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test"))
    ap.add_argument("--batch", type=int, default=BATCH)  # what `driftline replay` uses
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--explain", action="store_true",
                    help="log every statement's plan with auto_explain (ANALYZE, BUFFERS) to the server log")
    args, _ = ap.parse_known_args()
    from driftline.config import Config
    from driftline.ingest.pipeline import Pipeline
    from driftline.ingest.replay import replay
    from driftline.storage.store import Store

    _, path = simulated_stream(1800)
    n = count_lines(path)
    profile = Profile()
    with scratch_pg_database(args.pg, "driftline_pgstatements") as url:
        st = Store(url)
        st.migrate()
        if args.explain:
            from sqlalchemy import event

            def explain(dbapi: Any, _record: Any) -> None:
                with dbapi.cursor() as cur:
                    for setting in ("LOAD 'auto_explain'", "SET auto_explain.log_min_duration = 0",
                                    "SET auto_explain.log_analyze = on", "SET auto_explain.log_buffers = on",
                                    "SET auto_explain.log_wal = on", "SET auto_explain.log_timing = on"):
                        cur.execute(setting)
                dbapi.commit()

            st.engine.dispose()
            event.listen(st.engine, "connect", explain)
        install(profile)
        replay(Pipeline(Config(), st), path, batch_size=args.batch)
        st.close()
        profile.busy = True  # the scratch database's DROP is not the replay's: not counted
    batches = -(-n // args.batch)
    total = sum(profile.server.values()) / batches
    print(f"{n:,} events in {batches} batches of {args.batch:,}: server CPU {total:.2f} ms/batch over "
          f"{sum(profile.calls.values()) / batches:.1f} driver calls/batch, wall {sum(profile.wall.values()) / batches:.1f}")
    for key in sorted(profile.server, key=profile.server.__getitem__, reverse=True)[:args.top]:
        print(f"  server {profile.server[key] / batches:6.2f}  wall {profile.wall[key] / batches:6.2f} ms/batch  "
              f"calls/batch {profile.calls[key] / batches:5.2f}  {key}")


if __name__ == "__main__":
    main()
