"""The 3-node Apache Kafka reference cluster (used by bench/cluster.py): it forms one cluster with RF 3,
acks=all writes survive a node's kill -9, and the killed node rejoins the ISR after a restart."""

import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from lakefeed_testing.kafka_reference import KafkaCluster, kafka_cluster_reference


@pytest.fixture(scope="module")
def kafka_cluster() -> Iterator[KafkaCluster]:
    with kafka_cluster_reference(nodes=3) as cluster:
        yield cluster


def _produce(cluster: KafkaCluster, topic: str, values: list[str]) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "enable.idempotence": True,
                         "message.timeout.ms": 30000})
    for value in values:
        producer.produce(topic, value.encode(), partition=0)
    assert producer.flush(40) == 0


def _isr(admin: AdminClient, topic: str) -> list[int]:
    return sorted(admin.list_topics(topic, timeout=10).topics[topic].partitions[0].isrs)


def test_rf3_acks_all_survives_a_killed_leader(kafka_cluster: KafkaCluster) -> None:
    topic = f"ref-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1)])[topic].result(30)  # RF from default.replication.factor=3
    described = admin.list_topics(topic, timeout=10).topics[topic].partitions[0]
    assert sorted(described.replicas) == [1, 2, 3]
    _produce(kafka_cluster, topic, [f"a{i}" for i in range(50)])
    kafka_cluster.kill(described.leader)
    _produce(kafka_cluster, topic, [f"b{i}" for i in range(50)])  # a new leader from the ISR takes over
    kafka_cluster.restart(described.leader)
    deadline = time.monotonic() + 60
    while _isr(admin, topic) != [1, 2, 3]:
        assert time.monotonic() < deadline, f"ISR {_isr(admin, topic)} after the restart"
        time.sleep(0.5)
    consumer = Consumer({"bootstrap.servers": kafka_cluster.bootstrap_servers, "group.id": f"g-{topic}",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got: list[str] = []
    try:
        deadline = time.monotonic() + 30
        while len(got) < 100 and time.monotonic() < deadline:
            got += [m.value().decode() for m in consumer.consume(100, 1.0) if m.error() is None]
    finally:
        consumer.close()
    assert got == [f"a{i}" for i in range(50)] + [f"b{i}" for i in range(50)]
