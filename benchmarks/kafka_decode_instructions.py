"""Unpacking fetched Kafka records in CPU instructions (valgrind): kafka-python's own PartitionRecords against
driftline's FastPartitionRecords (kafka/decode.py), on v2 batches of the simulated stream's events as kafka_bench
produces them (key = prediction_id, value = the event's JSON, 500 records a batch).

Usage: python benchmarks/kafka_decode_instructions.py [--days D] [--per-day N]
Needs valgrind (apt-get install valgrind).
"""

from __future__ import annotations

import sys

from bench_common import valgrind_child_args, valgrind_instructions


def _batches(days: float, per_day: int) -> tuple[bytes, int]:
    """The events as concatenated v2 record batches, and how many records."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    from kafka_bench import events

    recs = events(days, per_day)
    out = []
    for start in range(0, len(recs), 500):
        b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                      producer_epoch=-1, base_sequence=-1, batch_size=10**8)
        for i, (_, key, value) in enumerate(recs[start:start + 500]):
            b.append(i, timestamp=1_700_000_000_000 + i, key=key, value=value, headers=[])
        data = bytearray(b.build())
        data[0:8] = start.to_bytes(8, "big")  # base offset
        out.append(bytes(data))
    return b"".join(out), len(recs)


def _child(mode: str, days: float, per_day: int) -> None:
    """What runs under valgrind: building the batches only, or building and unpacking them with one class."""
    from kafka import TopicPartition
    from kafka.consumer.fetcher import Fetcher
    from kafka.record.memory_records import MemoryRecords

    from driftline.kafka.decode import FastPartitionRecords

    data, n = _batches(days, per_day)
    cls = {"kafka-python": Fetcher.PartitionRecords, "fast": FastPartitionRecords}.get(mode)
    if cls is not None:
        got = cls(0, TopicPartition("predictions", 0), MemoryRecords(data)).take(n + 1)
        assert len(got) == n, (len(got), n)


def main() -> None:
    args, rest = valgrind_child_args()
    _, n = _batches(args.days, args.per_day)
    child = [sys.executable, __file__, "--child"]
    base = valgrind_instructions([*child, "none", *rest])
    for mode in ("kafka-python", "fast"):
        ir = valgrind_instructions([*child, mode, *rest]) - base
        print(f"{mode:13s} {ir / n:10,.0f} instructions per record ({n:,} records)")


if __name__ == "__main__":
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        _child(sys.argv[2], float(sys.argv[3]), int(sys.argv[4]))
    else:
        main()
