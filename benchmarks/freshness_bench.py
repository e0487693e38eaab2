"""Freshness on a caught-up live path: how long after a record is produced `driftline run`'s consumer has stored it,
next to how long a bare kafka-python reader of the same topic takes to receive it (the baseline, same run).

A trickle (one event every --gap seconds) is what a caught-up service sees most of the time; each record is stored
after the batch linger (kafka.batch_linger_ms, 250 ms by default) plus whatever the batch waits for. Until the
topic-id check moved to a connection of its own (log_ids.SideIds), each batch also waited behind the consumer's own
fetch, parked by the broker for fetch_max_wait_ms (500 ms by default).

Usage: python benchmarks/freshness_bench.py [--events N] [--gap S]
Compare commits by running it with PYTHONPATH pointing at each one's src/ (and this directory).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from kafka_bench import events, start_consumer  # noqa: E402
from bench_common import scratch_dir  # noqa: E402


def _bare_latencies(bootstrap: str, topic: str, records: list[tuple[str, bytes, bytes]], gap: float) -> list[float]:
    """Produce each record after `gap` s; seconds until a bare reader positioned at the end receives it."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    reader = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None)
    tps = [TopicPartition(topic, p) for p in reader.partitions_for_topic(topic)]
    reader.assign(tps)
    reader.seek_to_end()
    for tp in tps:
        reader.position(tp)
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    out = []
    try:
        for _, key, value in records:
            time.sleep(gap)
            t0 = time.perf_counter()
            producer.send(topic, key=key, value=value).get(timeout=10)
            while not any(reader.poll(timeout_ms=50).values()):
                pass
            out.append(time.perf_counter() - t0)
    finally:
        producer.close()
        reader.close()
    return out


def _stored_latencies(bootstrap: str, topics: dict[str, str], records: list[tuple[str, bytes, bytes]], gap: float,
                      work: Path) -> list[float]:
    """The same for the live consumer (in a thread of this process): seconds until its stored position moves."""
    from kafka import KafkaProducer

    store, stop, consumer, th = start_consumer(bootstrap, topics, f"sqlite:///{work / 'fresh.db'}")

    def stored() -> int:
        while True:
            try:
                return sum(list(consumer.expected.values()))
            except RuntimeError:  # changed while summed
                continue

    while not (consumer.expected and not consumer.pending):
        time.sleep(0.05)
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    out = []
    try:
        for _, key, value in records:
            time.sleep(gap)
            before = stored()
            t0 = time.perf_counter()
            producer.send(topics["predictions"], key=key, value=value).get(timeout=10)
            while stored() == before:
                time.sleep(0.002)
            out.append(time.perf_counter() - t0)
    finally:
        producer.close()
        stop.set()
        th.join(timeout=30)
        store.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=20)
    ap.add_argument("--gap", type=float, default=1.0, help="seconds between produced events")
    args = ap.parse_args()
    import logging

    from kafka_fixtures import create_topics, start_tansu, unique_name

    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    work = Path(scratch_dir("driftline-fresh-"))
    broker = start_tansu(log_dir=work)
    try:
        topics = {"predictions": unique_name("fresh-p"), "outcomes": unique_name("fresh-o")}
        bare_topic = unique_name("fresh-bare")
        create_topics(broker.bootstrap, [*topics.values(), bare_topic], 2)
        preds = [r for r in events(1, 2000) if r[0] == "predictions"][:args.events]
        bare = _bare_latencies(broker.bootstrap, bare_topic, preds, args.gap)
        live = _stored_latencies(broker.bootstrap, topics, preds, args.gap, work)
        b, s = statistics.median(bare), statistics.median(live)
        print(f"{len(preds)} events, one every {args.gap:g} s")
        print(f"bare reader receives it       median {b * 1000:7.1f} ms  max {max(bare) * 1000:7.1f} ms (baseline)")
        print(f"driftline run has stored it   median {s * 1000:7.1f} ms  max {max(live) * 1000:7.1f} ms")
        print(f"stored ÷ received (medians)   {s / b:.1f}")
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
