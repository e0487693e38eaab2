"""CPU cost of the store's batch calls alone (join lookups and commit_batch), replayed from one captured replay of
the simulated stream into fresh databases: the engine and decoding are left out, so two commits' store code can be
compared with far less noise than a whole replay gives.

Usage: python benchmarks/store_ops_bench.py [--workdir DIR] [--repeats N] [--pg postgresql://127.0.0.1/test]
(--pg: the database's driftline tables are emptied before each run.)
"""

from __future__ import annotations

import copy
import os
import sys
import time
from typing import Any

from driftline.config import Config
from driftline.ingest.pipeline import Pipeline
from driftline.ingest.replay import replay
from driftline.storage.store import Store

from bench_common import simulated_stream

Call = tuple[str, tuple[Any, ...], dict[str, Any]]


def capture(path: str, work: str) -> list[Call]:
    """The store's load_join and commit_batch calls of one replay, in order, with their arguments copied."""
    db = os.path.join(work, "capture.db")
    if os.path.exists(db):
        os.remove(db)
    st = Store(f"sqlite:///{db}")
    st.migrate()
    calls: list[Call] = []
    load, commit = st.load_join, st.commit_batch

    def load_join(conn: Any, ids: Any) -> Any:
        ids = list(ids)
        calls.append(("load_join", (ids,), {}))
        return load(conn, ids)

    def commit_batch(conn: Any, *args: Any, **kwargs: Any) -> None:
        calls.append(("commit_batch", copy.deepcopy(args), copy.deepcopy(kwargs)))
        commit(conn, *args, **kwargs)

    st.load_join, st.commit_batch = load_join, commit_batch  # type: ignore[method-assign]
    replay(Pipeline(Config(), st), path)
    st.close()
    return calls


def run(url: str, calls: list[Call]) -> dict[str, float]:
    """CPU seconds per call kind of the captured calls against a fresh database (one transaction per batch); the
    calls' arguments are reused as they are (commit_batch does not change them)."""
    st = Store(url)
    st.migrate()
    spent = {"load_join": 0.0, "commit_batch": 0.0}
    i = 0
    while i < len(calls):
        with st.write() as conn:
            while i < len(calls):
                name, args, kwargs = calls[i]
                t = time.process_time()
                getattr(st, name)(conn, *args, **kwargs)
                spent[name] += time.process_time() - t
                i += 1
                if name == "commit_batch":
                    break
    st.close()
    return spent


def reset(url: str) -> None:
    """Empty a PostgreSQL database's public schema (the benchmark's own database only)."""
    from sqlalchemy import create_engine, text

    engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    with engine.begin() as conn:
        conn.execute(text("DROP SCHEMA public CASCADE; CREATE SCHEMA public"))
    engine.dispose()


def main() -> None:
    argv = sys.argv[1:]
    repeats = int(argv[argv.index("--repeats") + 1]) if "--repeats" in argv else 5
    pg = argv[argv.index("--pg") + 1] if "--pg" in argv else None
    work, path = simulated_stream(1800)
    calls = capture(path, work)
    best: dict[str, float] = {}
    for _ in range(repeats):
        if pg:
            reset(pg)
            url = pg
        else:
            db = os.path.join(work, "ops.db")
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(db + suffix):
                    os.remove(db + suffix)
            url = f"sqlite:///{db}"
        spent = run(url, calls)
        for k, v in spent.items():
            best[k] = min(best.get(k, float("inf")), v)
    print(f"{'postgresql' if pg else 'sqlite'}: best of {repeats}, CPU seconds")
    for k, v in best.items():
        print(f"  {k:<14} {v:6.3f} s")
    print(f"  {'total':<14} {sum(best.values()):6.3f} s")


if __name__ == "__main__":
    main()
