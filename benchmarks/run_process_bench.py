"""`driftline run` ×1 as a subprocess against SQLite and PostgreSQL: events/s and the process's CPU seconds (user,
system) next to a bare kafka-python reader of the same topics — a quicker loop than kafka_bench.py for the run path.

Each run is paired with a bare-reader reading taken just before it (that rate alone moves by ±40 % between
readings on a shared machine); the median of the paired ratios is printed last.

Usage: python benchmarks/run_process_bench.py [--days D] [--per-day N] [--pg URL] [--only sqlite|pg] [--repeat K]
       [--pg-set NAME=VALUE ...]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from kafka_bench import events, produce, raw_rate, write_config  # noqa: E402
from driftline.storage.store import Store  # noqa: E402
from bench_common import scratch_dir  # noqa: E402


def cpu_seconds(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of a live process, from /proc/PID/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def run_once(bootstrap: str, topics: dict[str, str], url: str, n: int, work: Path) -> tuple[float, float, float]:
    """One `driftline run`: (events/s from positioned to the last record, user CPU s, system CPU s in that span)."""
    from tcp_forwarder import free_port

    config = write_config(work / f"run-{uuid.uuid4().hex[:6]}.json", topics, uuid.uuid4().hex)
    Store(url).migrate()
    log = work / f"run-{uuid.uuid4().hex[:6]}.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "driftline.cli", "--log-level", "INFO", "--config", str(config),
                                 "--db", url, "run", "--kafka", bootstrap, "--port", str(free_port()), "--no-evaluate"],
                                stdout=fh, stderr=subprocess.STDOUT)
    store = Store(url)

    def positioned() -> bool:
        text = log.read_text(errors="replace")
        assigned = re.findall(r"partitions assigned: (.+)", text)
        return bool(assigned) and len(assigned[-1].split(", ")) == 4 and \
            text.rfind("resuming at stored positions") > text.rfind("partitions assigned")

    def stored() -> int:
        return sum(sum(store.positions(f"kafka:{t}").values()) for t in topics.values())

    try:
        t0 = base = None
        cpu0 = (0.0, 0.0)
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"driftline run exited with {proc.returncode}:\n{log.read_text()[-2000:]}")
            if t0 is None and positioned():
                t0, base, cpu0 = time.perf_counter(), stored(), cpu_seconds(proc.pid)
            if t0 is not None and stored() >= n:
                break
            time.sleep(0.05)
        cpu1 = cpu_seconds(proc.pid)
        return (n - base) / (time.perf_counter() - t0), cpu1[0] - cpu0[0], cpu1[1] - cpu0[1]  # type: ignore[operator]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        store.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--days", type=float, default=3)
    ap.add_argument("--per-day", type=int, default=8000)
    ap.add_argument("--pg", default=os.environ.get("DRIFTLINE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test"))
    ap.add_argument("--only", choices=("sqlite", "pg"))
    ap.add_argument("--repeat", type=int, default=1, help="runs per database (each a fresh group and database)")
    ap.add_argument("--pg-set", action="append", default=[], metavar="NAME=VALUE",
                    help="a server setting for the run's PostgreSQL database (ALTER DATABASE … SET), e.g. "
                         "synchronous_commit=off; repeatable")
    args = ap.parse_args()
    import logging

    import psycopg
    from kafka_fixtures import create_topics, start_tansu

    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    work = Path(scratch_dir("driftline-runbench-"))
    broker = start_tansu(log_dir=work)
    dbname = f"driftline_runbench_{uuid.uuid4().hex[:8]}"
    pg_base = args.pg.rsplit("/", 1)[0]
    try:
        recs = events(args.days, args.per_day)
        n = len(recs)
        topics = {"predictions": "bench-predictions", "outcomes": "bench-outcomes"}
        create_topics(broker.bootstrap, topics.values(), 2)
        produce(broker.bootstrap, topics, recs)
        print(f"{n:,} events")
        ratios: dict[str, list[float]] = {"SQLite": [], "PostgreSQL": []}
        for i in range(args.repeat):
            for db in ("SQLite", "PostgreSQL"):
                if args.only == ("pg" if db == "SQLite" else "sqlite"):
                    continue
                if db == "SQLite":
                    url = f"sqlite:///{work / f'run{i}.db'}"
                else:
                    with psycopg.connect(args.pg, autocommit=True) as conn:
                        conn.execute(f'CREATE DATABASE "{dbname}_{i}"')
                        for setting in args.pg_set:
                            name, value = setting.split("=", 1)
                            conn.execute(f'ALTER DATABASE "{dbname}_{i}" SET {name} = {value}')
                    url = f"{pg_base}/{dbname}_{i}"
                raw = raw_rate(broker.bootstrap, topics, n)  # read right before each run: the reader's rate drifts
                rate, user, sys_ = run_once(broker.bootstrap, topics, url, n, work)
                ratios[db].append(rate / raw)
                print(f"driftline run ×1 → {db + ':':12s} {rate:9,.0f}/s ratio {rate / raw:.2f} (bare reader just "
                      f"before: {raw:,.0f}/s); CPU {user:.2f}s user + {sys_:.2f}s sys = "
                      f"{(user + sys_) * 1e6 / n:.1f} µs/event", flush=True)
        for db, got in ratios.items():
            if got:
                print(f"{db}: median ratio {statistics.median(got):.2f} over {len(got)} run(s)")
    finally:
        if args.only != "sqlite":
            with psycopg.connect(args.pg, autocommit=True) as conn:
                for i in range(args.repeat):
                    conn.execute(f'DROP DATABASE IF EXISTS "{dbname}_{i}" WITH (FORCE)')
        broker.stop()


if __name__ == "__main__":
    main()
