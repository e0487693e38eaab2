"""Peak RSS of `driftline run` (SQLite) reading a backlog of large, valid prediction events (each under
limits.max_event_bytes, the bulk in an ignored field): the memory a batch costs when its records are big.

Starts a private tansu broker, produces the events, starts `driftline run`, samples `/proc/PID/status` VmRSS every
0.1 s until every event is stored, then a few seconds more (is the memory given back?).

Usage: python benchmarks/big_events_bench.py [--events 900] [--size 1040145] [--array] [--partitions 1]
       [--set kafka.batch_max_bytes=N ...] [--env NAME=VALUE ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from bench_common import scratch_dir  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))


def rss_mb(pid: int) -> float:
    """Resident set size of a live process in MB (VmRSS)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def event(i: int, size: int, array: bool) -> bytes:
    """One valid prediction of about `size` bytes; the bulk in an ignored `note` field (a string or an array)."""
    head = {"type": "prediction", "prediction_id": f"big-{i}", "model": "fraud", "model_version": "v1",
            "ts": "2026-01-09T00:00:00Z", "score": 0.5, "features": {"amount": 1.0}}
    base = len(json.dumps(head, separators=(",", ":")).encode()) + len(',"note":') + 2
    fill = max(0, size - base)
    note: object = [0] * (fill // 2) if array else "A" * fill
    return json.dumps({**head, "note": note}, separators=(",", ":")).encode()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=900)
    ap.add_argument("--size", type=int, default=1_040_145)
    ap.add_argument("--array", action="store_true", help="bulk as an array of numbers instead of a string")
    ap.add_argument("--partitions", type=int, default=1)
    ap.add_argument("--set", action="append", default=[], metavar="kafka.NAME=VALUE")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--trace", action="store_true", help="print RSS and stored events at every sample")
    ap.add_argument("--after", type=float, default=5.0, help="seconds to keep sampling after the last store")
    args = ap.parse_args()
    import logging

    from kafka import KafkaProducer
    from kafka_fixtures import create_topics, start_tansu
    from tcp_forwarder import free_port
    from driftline.storage.store import Store

    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    work = Path(scratch_dir("driftline-bigbench-"))
    broker = start_tansu(log_dir=work)
    proc = None
    try:
        topics = {"predictions": f"big-p-{uuid.uuid4().hex[:6]}", "outcomes": f"big-o-{uuid.uuid4().hex[:6]}"}
        create_topics(broker.bootstrap, topics.values(), args.partitions)
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=5, max_request_size=4 << 20)
        sample = event(0, args.size, args.array)
        for i in range(args.events):
            producer.send(topics["predictions"], key=f"big-{i}".encode(), value=event(i, args.size, args.array))
        producer.flush()
        producer.close()
        kafka: dict[str, object] = {"predictions_topic": topics["predictions"], "outcomes_topic": topics["outcomes"],
                                    "group_id": uuid.uuid4().hex, "options": {"session_timeout_ms": 6000,
                                                                              "heartbeat_interval_ms": 2000}}
        for item in args.set:
            name, value = item.split("=", 1)
            kafka[name.removeprefix("kafka.")] = json.loads(value)
        config = work / "driftline.json"
        config.write_text(json.dumps({"kafka": kafka}))
        url = f"sqlite:///{work / 'big.db'}"
        Store(url).migrate()
        env = {**os.environ, **dict(e.split("=", 1) for e in args.env)}
        log = work / "run.log"
        with open(log, "wb") as fh:
            proc = subprocess.Popen([sys.executable, "-m", "driftline.cli", "--log-level", "INFO", "--config",
                                     str(config), "--db", url, "run", "--kafka", broker.bootstrap, "--port",
                                     str(free_port()), "--no-evaluate"], stdout=fh, stderr=subprocess.STDOUT, env=env)
        store = Store(url)
        source = f"kafka:{topics['predictions']}"
        start_rss = peak = 0.0
        t0 = time.monotonic()
        done_at = None
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"driftline run exited with {proc.returncode}:\n{log.read_text()[-2000:]}")
            now = rss_mb(proc.pid)
            start_rss = start_rss or now
            peak = max(peak, now)
            stored = sum(store.positions(source).values())
            if args.trace:
                print(f"{time.monotonic() - t0:6.1f}s stored {stored:5d} RSS {now:7,.0f} MB", flush=True)
            if done_at is None and stored >= args.events:
                done_at = time.monotonic()
            if done_at is not None and time.monotonic() - done_at >= args.after:
                break
            if time.monotonic() - t0 > 600:
                raise RuntimeError("not stored within 600 s")
            time.sleep(0.1)
        print(f"{args.events} events of {len(sample):,} bytes ({'array' if args.array else 'string'}), "
              f"settings {args.set or 'default'} env {args.env or '-'}: RSS first sample {start_rss:,.0f} MB, "
              f"peak {peak:,.0f} MB, {args.after:.0f} s after the last store {rss_mb(proc.pid):,.0f} MB; "
              f"stored in {done_at - t0:.1f} s")
        store.close()
    finally:
        if proc is not None and proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=30)
        if proc is not None:
            closed = [ln for ln in log.read_text(errors="replace").splitlines() if "stored batches" in ln]
            print(closed[-1] if closed else "(no close line)")
        broker.stop()


if __name__ == "__main__":
    main()
