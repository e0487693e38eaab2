"""`driftline run`'s own path in CPU instructions (valgrind), without a broker: fetched v2 record batches (kafka_bench's
events, keyed by prediction_id, 500 records a batch or --per-batch R: a producer's default batch.size, 16 KiB, holds
about 60 of them; 2 partitions per topic) unpacked by FastPartitionRecords, then as LiveConsumer._store does it —
fresh_records, at_or_after, raw_records and a fenced Pipeline.process_batch into SQLite — 5,000 records per
partition a batch. Start-up (imports, building the batches, the schema) is measured
alone and subtracted; the CLI's collector setting and `run`'s frozen start-up heap are applied in both runs.

Instruction counts do not move with the machine's load: run it with PYTHONPATH pointing at each commit's src/.
Usage: python benchmarks/run_path_instructions.py [--days D] [--per-day N] [--per-batch R]
Needs valgrind (apt-get install valgrind).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from bench_common import scratch_dir, valgrind_child_args, valgrind_instructions

PER_PARTITION = 5000
"""Records per partition in one stored batch (4 partitions: kafka.batch_max_records' default 20,000)."""


def _fetched(days: float, per_day: int, per_batch: int) -> dict[Any, bytes]:
    """Each partition's records as concatenated v2 batches (the key picks the partition, as kafka-python's)."""
    from kafka import TopicPartition
    from kafka.partitioner.default import murmur2
    from kafka.record.default_records import DefaultRecordBatchBuilder

    from kafka_bench import events

    per_tp: dict[Any, list[tuple[bytes, bytes]]] = {}
    for topic, key, value in events(days, per_day):
        per_tp.setdefault(TopicPartition(topic, (murmur2(key) & 0x7FFFFFFF) % 2), []).append((key, value))
    data = {}
    for tp, records in sorted(per_tp.items()):
        out = []
        for start in range(0, len(records), per_batch):
            b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                          producer_epoch=-1, base_sequence=-1, batch_size=10**8)
            for i, (key, value) in enumerate(records[start:start + per_batch]):
                b.append(i, timestamp=1_700_000_000_000 + i, key=key, value=value, headers=[])
            batch = bytearray(b.build())
            batch[0:8] = start.to_bytes(8, "big")  # base offset
            out.append(bytes(batch))
        data[tp] = b"".join(out)
    return data


def _child(mode: str, days: float, per_day: int, per_batch: int) -> None:
    """What runs under valgrind: start-up only ("none"), or start-up and storing every record ("run")."""
    import gc

    from kafka.record.memory_records import MemoryRecords

    from driftline.config import Config
    from driftline.gc_tuning import tune_for_batches
    from driftline.ingest.pipeline import Pipeline
    from driftline.kafka.batches import at_or_after, fresh_records, raw_records
    from driftline.kafka.decode import FastPartitionRecords
    from driftline.storage.store import Store

    data = _fetched(days, per_day, per_batch)
    store = Store(f"sqlite:///{scratch_dir('driftline-runpath-')}/run.db")
    store.migrate()
    pipeline = Pipeline(Config(), store)
    tune_for_batches()  # as the CLI does; `run` freezes its start-up heap (service/live.py)
    gc.collect()
    gc.freeze()
    if mode == "none":
        return
    polled = {tp: FastPartitionRecords(0, tp, MemoryRecords(d)).take(10**9) for tp, d in data.items()}
    expected = {tp: 0 for tp in polled}
    while any(expected[tp] < len(polled[tp]) for tp in polled):
        chunk = {tp: polled[tp][expected[tp]:expected[tp] + PER_PARTITION] for tp in polled}
        batch = {tp: at_or_after(recs, expected[tp]) for tp, recs in fresh_records(chunk, expected, set()).items()}
        raws = []
        for tp, recs in batch.items():
            raws.extend(raw_records(recs, f"kafka:{tp.topic}", tp.partition, tp.topic.removesuffix("s")))
        pipeline.process_batch(raws, None, {(f"kafka:{tp.topic}", tp.partition): expected[tp] for tp in batch})
        for tp, recs in batch.items():
            expected[tp] = recs[-1].offset + 1
    assert sum(expected.values()) == sum(map(len, polled.values()))


def main() -> None:
    """Print the live path's instructions per event."""
    per_batch = 500
    if "--per-batch" in sys.argv:  # ours: taken out before the common options are parsed
        at = sys.argv.index("--per-batch")
        per_batch = int(sys.argv[at + 1])
        del sys.argv[at:at + 2]
    args, rest = valgrind_child_args()
    rest = [*rest, str(per_batch)]
    from kafka_bench import events

    n = len(events(args.days, args.per_day))
    child = [sys.executable, __file__, "--child"]
    ir = valgrind_instructions([*child, "run", *rest]) - valgrind_instructions([*child, "none", *rest])
    print(f"run path (unpack → stored batch) {ir / n / 1000:8.1f} k instructions per event ({n:,} events, "
          f"{per_batch} records a v2 batch)")


if __name__ == "__main__":
    HERE = Path(__file__).resolve().parent
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(HERE.parent / "tests"))  # kafka_bench imports kafka_fixtures from there
    if len(sys.argv) == 6 and sys.argv[1] == "--child":
        _child(sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
    else:
        main()
