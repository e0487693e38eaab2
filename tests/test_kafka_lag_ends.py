"""The log ends behind the lag of partitions not yet fetched are exact (on-call tryout: before its first assignment
`driftline run` exported lag 127,487 for 127,653 records produced and none stored). The test broker, tansu 0.6,
lists a partition's end (ListOffsets LATEST) as its last batch's base offset + 1, so every partition whose last
produce carried several records read low until the member fetched it; a fetch at the listed end reports the true
end (kafka/log_ends.py). The real broker, batches of several records, both isolation levels."""

from __future__ import annotations

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from driftline.kafka.lag import end_offsets
from driftline.kafka.log_ids import SideIds
from kafka_fixtures import create_topics, unique_name


@pytest.mark.parametrize("isolation", ["read_committed", "read_uncommitted"])
def test_log_ends_count_every_record_of_a_multi_record_last_batch(kafka_bootstrap: str, isolation: str) -> None:
    topics = [unique_name("lag-p"), unique_name("lag-o")]
    create_topics(kafka_bootstrap, topics, 2)
    produced = {TopicPartition(t, p): n for t in topics for p, n in ((0, 37), (1, 1))}
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, linger_ms=200, batch_size=1 << 20)
    try:
        for tp, n in produced.items():
            for i in range(n):
                producer.send(tp.topic, b"x%d" % i, partition=tp.partition)
            producer.flush(timeout=60)  # one batch of n records per partition
    finally:
        producer.close(timeout=10)
    from kafka import KafkaAdminClient

    side = SideIds(lambda: KafkaAdminClient(bootstrap_servers=kafka_bootstrap, request_timeout_ms=5000),
                   lambda: 0.0, isolation_level=isolation)
    consumer = KafkaConsumer(bootstrap_servers=kafka_bootstrap, isolation_level=isolation)
    try:
        consumer.topics()  # metadata for partitions_for_topic, as the live consumer has it
        ends = end_offsets(consumer, topics, side=side)  # what the lag refresh asks (upkeep._refresh_all_lags)
        assert side.admin is not None, "the side client answered"
        assert ends == produced, ends
    finally:
        side.close()
        consumer.close()
