"""The Apache Kafka reference: real clients produce, consume and administer it."""

import uuid
from typing import Any

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from lakefeed_testing import KafkaReference
from lakefeed_testing.kafka_reference import run_kafka_tool


def _create_topic(kafka: KafkaReference, partitions: int = 1) -> str:
    topic = f"smoke-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])[topic].result(30)
    return topic


def _produce(kafka: KafkaReference, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "enable.idempotence": True,
                         "acks": "all"})
    for i in range(count):
        producer.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode())
    assert producer.flush(30) == 0


def test_confluent_kafka_produces_and_consumes(kafka: KafkaReference) -> None:
    topic = _create_topic(kafka, partitions=2)
    _produce(kafka, topic, 100)
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": f"g-{topic}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    received: dict[bytes, bytes] = {}
    try:
        for _ in range(60):
            for message in consumer.consume(num_messages=100, timeout=1.0):
                assert message.error() is None, message.error()
                received[message.key()] = message.value()
            if len(received) == 100:
                break
    finally:
        consumer.close()
    assert received == {f"k{i}".encode(): f"v{i}".encode() for i in range(100)}


def test_kafka_cli_tools_run_from_the_jars(kafka: KafkaReference) -> None:
    topic = _create_topic(kafka, partitions=3)
    described = run_kafka_tool("kafka-topics", "--bootstrap-server", kafka.bootstrap_servers,
                               "--describe", "--topic", topic)
    assert described.returncode == 0, described.stderr
    assert f"Topic: {topic}" in described.stdout and "PartitionCount: 3" in described.stdout


def test_spark_kafka_source_reads_the_reference(kafka: KafkaReference, spark: Any) -> None:
    topic = _create_topic(kafka)
    _produce(kafka, topic, 20)
    frame = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", kafka.bootstrap_servers)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
        .selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value")
    )
    assert sorted((r.key, r.value) for r in frame.collect()) == sorted((f"k{i}", f"v{i}") for i in range(20))
