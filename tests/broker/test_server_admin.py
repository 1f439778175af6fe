"""confluent-kafka AdminClient against our broker over TCP: configs (describe, alter, incremental),
partitions, delete-records, cluster; and the effect of altered configs on producers and consumers."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    TIMESTAMP_LOG_APPEND_TIME,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
)

from broker.config_catalog import TOPIC_CONFIGS
from tests.broker.conftest import BrokerProcess

# AlterConfigs is deprecated in favour of IncrementalAlterConfigs, but clients still send it: both are tested.
pytestmark = pytest.mark.filterwarnings("ignore:alter_configs has been deprecated")


def _admin(broker: BrokerProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def _create(broker: BrokerProcess, name: str, partitions: int = 1, **configs: str) -> None:
    admin = _admin(broker)  # kept in a variable: a collected client fails its pending futures
    admin.create_topics([NewTopic(name, partitions, 1, config=configs)])[name].result(10)


def _describe(broker: BrokerProcess, kind: ConfigResource.Type, name: str) -> dict[str, Any]:
    resource = ConfigResource(kind, name)
    admin = _admin(broker)
    return dict(admin.describe_configs([resource])[resource].result(10))


def _produce(broker: BrokerProcess, topic: str, values: list[bytes], partition: int = 0, acks: str = "1") -> list[Any]:
    producer = Producer({"bootstrap.servers": broker.bootstrap, "message.max.bytes": 1_000_000, "acks": acks})
    reports: list[Any] = []
    for value in values:
        producer.produce(topic, value, partition=partition, on_delivery=lambda e, m: reports.append((e, m)))
        producer.flush(20)  # one batch per value: a rejected batch must not take the next value with it
    return reports


def _first_message(broker: BrokerProcess, topic: str, partition: int = 0) -> Any:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": uuid.uuid4().hex})
    consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                return message
        raise AssertionError(f"nothing consumed from {topic}-{partition}")
    finally:
        consumer.close()


def test_describe_configs_lists_every_topic_config_with_default_and_source(
    broker: BrokerProcess, topic_name: str
) -> None:
    _create(broker, topic_name, **{"retention.ms": "3600000", "cleanup.policy": "compact"})
    configs = _describe(broker, ConfigResource.Type.TOPIC, topic_name)
    assert set(configs) == set(TOPIC_CONFIGS)
    assert configs["retention.ms"].value == "3600000"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert [(s.name, s.value) for s in configs["retention.ms"].synonyms.values()] == [
        ("retention.ms", "3600000"), ("log.retention.ms", "604800000")]
    assert configs["cleanup.policy"].value == "compact"
    # The broker fixture runs with message.max.bytes=200000: the topic inherits it as a static broker config.
    assert configs["max.message.bytes"].value == "200000"
    assert configs["max.message.bytes"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    assert configs["segment.bytes"].value == "1073741824"
    assert configs["segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value
    assert configs["segment.bytes"].is_default and not configs["segment.bytes"].is_read_only


def test_describe_broker_configs(broker: BrokerProcess) -> None:
    configs = _describe(broker, ConfigResource.Type.BROKER, "1")
    assert configs["message.max.bytes"].value == "200000"
    assert configs["message.max.bytes"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    assert configs["num.partitions"].value == "1"
    assert configs["num.partitions"].source == ConfigSource.DEFAULT_CONFIG.value
    assert configs["min.insync.replicas"].is_read_only


def test_alter_configs_take_effect_on_producers_and_consumers(broker: BrokerProcess, topic_name: str) -> None:
    _create(broker, topic_name)
    admin = _admin(broker)
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic_name,
                              set_config={"max.message.bytes": "1000", "message.timestamp.type": "LogAppendTime"})
    admin.alter_configs([resource])[resource].result(10)
    reports = _produce(broker, topic_name, [b"x" * 5000, b"small"])
    errors = {m.value()[:5]: e for e, m in reports}
    assert errors[b"xxxxx"] is not None and errors[b"xxxxx"].code() == KafkaError.MSG_SIZE_TOO_LARGE
    assert errors[b"small"] is None
    message = _first_message(broker, topic_name)
    assert message.value() == b"small"
    assert message.timestamp()[0] == TIMESTAMP_LOG_APPEND_TIME
    assert abs(message.timestamp()[1] - time.time() * 1000) < 60_000
    # AlterConfigs replaces the whole set: max.message.bytes goes back to the broker's value.
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic_name, set_config={"retention.bytes": "100000"})
    admin.alter_configs([resource])[resource].result(10)
    configs = _describe(broker, ConfigResource.Type.TOPIC, topic_name)
    assert configs["max.message.bytes"].value == "200000"
    assert configs["retention.bytes"].value == "100000"
    assert configs["message.timestamp.type"].value == "CreateTime"


def test_incremental_alter_configs_set_delete_append(broker: BrokerProcess, topic_name: str) -> None:
    _create(broker, topic_name, **{"retention.ms": "1000000", "segment.ms": "3600000"})
    admin = _admin(broker)
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic_name, incremental_configs=[
        ConfigEntry("retention.ms", "2000000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("segment.ms", None, incremental_operation=AlterConfigOpType.DELETE),
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
    ])
    admin.incremental_alter_configs([resource])[resource].result(10)
    configs = _describe(broker, ConfigResource.Type.TOPIC, topic_name)
    assert configs["retention.ms"].value == "2000000"
    assert configs["segment.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    assert configs["cleanup.policy"].value == "delete,compact"


@pytest.mark.parametrize(("name", "value", "expected"), [
    ("retention.ms", "soon", "expected an integer"),
    ("cleanup.policy", "shred", "compact, delete"),
    ("min.insync.replicas", "0", "at least 1"),
    ("no.such.config", "1", "unknown topic config"),
])  # fmt: skip
def test_invalid_config_values_are_rejected_with_the_reason(
    broker: BrokerProcess, topic_name: str, name: str, value: str, expected: str
) -> None:
    _create(broker, topic_name)
    admin = _admin(broker)
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic_name, set_config={name: value})
    with pytest.raises(KafkaException) as info:
        admin.alter_configs([resource])[resource].result(10)
    assert info.value.args[0].code() == KafkaError.INVALID_CONFIG
    assert expected in info.value.args[0].str()
    with pytest.raises(KafkaException) as created:
        admin.create_topics([NewTopic(topic_name + "x", 1, 1, config={name: value})])[topic_name + "x"].result(10)
    assert created.value.args[0].code() == KafkaError.INVALID_CONFIG


def test_min_insync_replicas_above_one_refuses_acks_all(broker: BrokerProcess, topic_name: str) -> None:
    _create(broker, topic_name, **{"min.insync.replicas": "2"})
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "message.timeout.ms": 3000})
    reports: list[Any] = []
    producer.produce(topic_name, b"v", on_delivery=lambda e, m: reports.append(e))
    producer.flush(10)
    assert reports and reports[0] is not None
    assert reports[0].code() in (KafkaError.NOT_ENOUGH_REPLICAS, KafkaError._MSG_TIMED_OUT)
    assert _produce(broker, topic_name, [b"acks=1 is fine"])[0][0] is None


def test_create_partitions_grows_a_topic(broker: BrokerProcess, topic_name: str) -> None:
    _create(broker, topic_name)
    admin = _admin(broker)
    admin.create_partitions([NewPartitions(topic_name, 3)])[topic_name].result(10)
    assert sorted(admin.list_topics(topic_name, timeout=10).topics[topic_name].partitions) == [0, 1, 2]
    assert _produce(broker, topic_name, [b"in the new partition"], partition=2)[0][0] is None
    assert _first_message(broker, topic_name, 2).value() == b"in the new partition"
    with pytest.raises(KafkaException) as shrink:
        admin.create_partitions([NewPartitions(topic_name, 2)])[topic_name].result(10)
    assert shrink.value.args[0].code() == KafkaError.INVALID_PARTITIONS


def test_delete_records_moves_the_low_watermark(broker: BrokerProcess, topic_name: str) -> None:
    _create(broker, topic_name)
    _produce(broker, topic_name, [f"r{i}".encode() for i in range(10)])
    admin = _admin(broker)
    deleted = admin.delete_records([TopicPartition(topic_name, 0, 4)])
    assert next(iter(deleted.values())).result(10).low_watermark == 4
    assert _first_message(broker, topic_name).value() == b"r4"
    with pytest.raises(KafkaException) as beyond:
        next(iter(admin.delete_records([TopicPartition(topic_name, 0, 99)]).values())).result(10)
    assert beyond.value.args[0].code() == KafkaError.OFFSET_OUT_OF_RANGE


def test_describe_cluster(broker: BrokerProcess) -> None:
    admin = _admin(broker)
    cluster = admin.describe_cluster().result(10)
    assert cluster.cluster_id == "lakefeed-broker-cluster"
    assert [(n.id, n.host, n.port) for n in cluster.nodes] == [(1, "127.0.0.1", broker.port)]
    assert cluster.controller.id == 1
