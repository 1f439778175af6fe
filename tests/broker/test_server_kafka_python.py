"""kafka-python (a pure-Python client with its own protocol code) against our broker over TCP."""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic
from kafka.errors import KafkaError

from tests.broker.conftest import BrokerProcess

PARTITIONS = 3


def _create(broker: BrokerProcess, topic: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1, topic_configs={"retention.ms": "7200000"})])
        described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
        assert "7200000" in repr(described)
    finally:
        admin.close()


def _consumer(broker: BrokerProcess, group: str, topic: str) -> KafkaConsumer:
    return KafkaConsumer(topic, bootstrap_servers=broker.bootstrap, group_id=group, auto_offset_reset="earliest",
                         enable_auto_commit=False, heartbeat_interval_ms=300, session_timeout_ms=6000)


def _drain(consumers: list[KafkaConsumer], want: int, seconds: float = 40) -> list[Any]:
    """Every consumer polls in its own thread, as applications run them, committing what it got, until `want`
    records arrived. (Polling them in turn from one thread stalled for the whole deadline about every other
    run: kafka-python 3.0.12 drops a JoinGroup/SyncGroup round that completes while its consumer is outside
    poll(), here while the other consumer was being polled, and joins again, which rebalances the group again;
    against Apache Kafka 4.3 the same loop stalled too, less often.)"""
    got: list[Any] = []
    lock = threading.Lock()
    enough = threading.Event()
    deadline = time.monotonic() + seconds
    if want <= 0:
        enough.set()

    def consume(consumer: KafkaConsumer) -> None:
        while not enough.is_set() and time.monotonic() < deadline:
            batches = consumer.poll(timeout_ms=100)
            if not batches:
                continue
            try:
                consumer.commit()
            except KafkaError:  # a rebalance took the partitions: read again whatever stays ours
                for partition, records in batches.items():
                    with contextlib.suppress(KafkaError, AssertionError):
                        consumer.seek(partition, records[0].offset)
                continue
            with lock:
                got.extend(record for records in batches.values() for record in records)
                if len(got) >= want:
                    enough.set()

    threads = [threading.Thread(target=consume, args=(consumer,), daemon=True) for consumer in consumers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + 10)
    return got


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_producer_and_consumer_group(broker: BrokerProcess, topic_name: str, compression: str | None) -> None:
    _create(broker, topic_name)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", enable_idempotence=True,
                             compression_type=compression, linger_ms=5)
    futures = [producer.send(topic_name, key=f"k{i}".encode(), value=f"v{i}".encode()) for i in range(300)]
    producer.flush(20)
    metadata = [f.get(10) for f in futures]
    producer.close()
    per_partition = {p: sorted(m.offset for m in metadata if m.partition == p) for p in range(PARTITIONS)}
    assert all(offsets == list(range(len(offsets))) for offsets in per_partition.values())

    group = f"g-{topic_name}"
    first, second = _consumer(broker, group, topic_name), _consumer(broker, group, topic_name)
    try:
        part = _drain([first, second], 150)
    finally:
        first.close()  # LeaveGroup: the other member takes over its partitions from the commits
    try:
        part += _drain([second], 300 - len(part))
    finally:
        second.close()
    values = sorted(r.value for r in part)
    assert values == sorted(f"v{i}".encode() for i in range(300))  # nothing lost, nothing twice
    check = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group, enable_auto_commit=False)
    try:
        committed = {p: check.committed(TopicPartition(topic_name, p)) for p in range(PARTITIONS)}
    finally:
        check.close()
    assert committed == {p: len(offsets) for p, offsets in per_partition.items()}
