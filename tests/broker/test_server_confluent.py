"""confluent-kafka (librdkafka) producers, consumers and admin against our broker over TCP."""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.broker.conftest import BrokerProcess


def _produce(broker: BrokerProcess, topic: str, values: list[bytes], **config: Any) -> list[Any]:
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5, **config})
    reports: list[Any] = []
    for index, value in enumerate(values):
        producer.produce(topic, value=value, key=str(index).encode(), on_delivery=lambda e, m: reports.append((e, m)))
    assert producer.flush(20) == 0
    return reports


def _consume(broker: BrokerProcess, topic: str, count: int, **config: Any) -> list[Any]:
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": f"g-{topic}", "auto.offset.reset": "earliest",
         "enable.auto.commit": False, **config}
    )
    consumer.subscribe([topic])
    messages: list[Any] = []
    deadline = time.monotonic() + 20
    while len(messages) < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None:
            assert message.error() is None, message.error()
            messages.append(message)
    consumer.close()
    return messages


@pytest.mark.parametrize("acks", ["0", "1", "all"])
@pytest.mark.parametrize("compression", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_produce_and_consume_every_acks_and_codec(
    broker: BrokerProcess, topic_name: str, acks: str, compression: str
) -> None:
    values = [f"{compression}-{acks}-{i}".encode() * 3 for i in range(200)]
    reports = _produce(broker, topic_name, values, acks=acks, **{"compression.type": compression})
    assert [error for error, _ in reports if error is not None] == []
    if acks != "0":
        offsets = sorted(message.offset() for _, message in reports)
        assert offsets == list(range(200))
    consumed = _consume(broker, topic_name, len(values))
    assert [m.value() for m in consumed] == values
    assert [m.offset() for m in consumed] == list(range(200))


def test_idempotent_producer_writes_each_message_once(broker: BrokerProcess, topic_name: str) -> None:
    values = [f"idem-{i}".encode() for i in range(2000)]
    reports = _produce(
        broker, topic_name, values, **{"enable.idempotence": True, "max.in.flight.requests.per.connection": 5,
                                         "batch.num.messages": 50}
    )
    assert all(error is None for error, _ in reports)
    consumed = _consume(broker, topic_name, len(values))
    assert [m.value() for m in consumed] == values


def test_oversized_record_is_rejected_with_message_too_large(broker: BrokerProcess, topic_name: str) -> None:
    # The broker runs with message.max.bytes=200000; the client allows more, so the broker decides.
    reports = _produce(broker, topic_name, [b"x" * 300_000], **{"message.max.bytes": 1_000_000})
    reports += _produce(broker, topic_name, [b"small"])
    errors = {message.value()[:5]: error for error, message in reports}
    assert errors[b"xxxxx"] is not None and errors[b"xxxxx"].code() == KafkaError.MSG_SIZE_TOO_LARGE
    assert errors[b"small"] is None
    assert [m.value() for m in _consume(broker, topic_name, 1)] == [b"small"]


def test_admin_creates_describes_and_deletes_topics(broker: BrokerProcess, topic_name: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    futures = admin.create_topics([NewTopic(topic_name, num_partitions=3, replication_factor=1)])
    futures[topic_name].result(10)
    metadata = admin.list_topics(topic_name, timeout=10)
    assert sorted(metadata.topics[topic_name].partitions) == [0, 1, 2]
    with pytest.raises(KafkaException) as duplicate:
        admin.create_topics([NewTopic(topic_name, num_partitions=1)])[topic_name].result(10)
    assert duplicate.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
    with pytest.raises(KafkaException) as invalid:
        admin.create_topics([NewTopic("bad name!", num_partitions=1)])["bad name!"].result(10)
    assert invalid.value.args[0].code() == KafkaError.TOPIC_EXCEPTION
    admin.delete_topics([topic_name])[topic_name].result(10)
    assert topic_name not in admin.list_topics(timeout=10).topics


def test_offsets_for_times_seeks_by_timestamp(broker: BrokerProcess, topic_name: str) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    base = int(time.time() * 1000) - 100_000
    for i in range(10):
        producer.produce(topic_name, value=f"v{i}".encode(), timestamp=base + i * 1000)
        producer.flush(10)  # one batch per record: lookups must find offsets inside and across batches
    for i in range(10, 20):
        producer.produce(topic_name, value=f"v{i}".encode(), timestamp=base + i * 1000)
    producer.flush(10)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"g-{topic_name}"})
    for wanted, expected in [(base + 3000, 3), (base + 3500, 4), (base + 14_000, 14), (base + 99_000, -1)]:
        found = consumer.offsets_for_times([TopicPartition(topic_name, 0, wanted)], timeout=10)
        assert found[0].offset == expected, (wanted - base, found[0])
    low, high = consumer.get_watermark_offsets(TopicPartition(topic_name, 0), timeout=10)
    assert (low, high) == (0, 20)
    consumer.assign([TopicPartition(topic_name, 0, 14)])
    message = consumer.poll(10)
    assert message is not None and message.value() == b"v14"
    consumer.close()


def test_fetch_waits_for_data_then_returns_it(broker: BrokerProcess, topic_name: str) -> None:
    _produce(broker, topic_name, [b"first"])
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"g-{topic_name}",
                         "fetch.wait.max.ms": 2000, "fetch.min.bytes": 1})
    consumer.assign([TopicPartition(topic_name, 0, 1)])
    assert consumer.poll(1.0) is None
    started = time.monotonic()
    _produce(broker, topic_name, [b"second"])
    message = consumer.poll(10)
    assert message is not None and message.value() == b"second"
    assert time.monotonic() - started < 1.5  # woken by the append, not by fetch.wait.max.ms
    consumer.close()
