"""The 3-node Apache Kafka reference cluster (bench/cluster.py; `LAKEFEED_CLUSTER_TESTS=kafka` runs the cluster
tests against it): three brokers in one cluster, RF 3 by default, and acks=all writes read back."""

import time
import uuid

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from lakefeed_testing.kafka_reference import kafka_cluster_reference


def test_three_nodes_rf3_acks_all_produce_and_consume() -> None:
    with kafka_cluster_reference(nodes=3) as cluster:
        topic = f"ref-{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        assert sorted(admin.list_topics(timeout=10).brokers) == [1, 2, 3]
        admin.create_topics([NewTopic(topic, 2)])[topic].result(30)  # RF from default.replication.factor=3
        partitions = admin.list_topics(topic, timeout=10).topics[topic].partitions
        assert all(sorted(p.replicas) == [1, 2, 3] for p in partitions.values())
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                             "enable.idempotence": True, "message.timeout.ms": 30000})
        for i in range(100):
            producer.produce(topic, f"v{i}".encode(), partition=i % 2)
        assert producer.flush(40) == 0
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": f"g-{topic}",
                             "enable.auto.commit": False})
        consumer.assign([TopicPartition(topic, p, 0) for p in (0, 1)])
        got: list[str] = []
        try:
            deadline = time.monotonic() + 30
            while len(got) < 100 and time.monotonic() < deadline:
                got += [(m.value() or b"").decode() for m in consumer.consume(100, 1.0) if m.error() is None]
        finally:
            consumer.close()
        assert sorted(got, key=lambda v: int(v[1:])) == [f"v{i}" for i in range(100)]
