"""Kafka transactions through real clients: the same tests against our broker and against Apache Kafka 4.3
(the reference), so the assertions are Kafka's behaviour, not ours restated.

confluent-kafka's transactional producer commits and aborts; read_committed consumers must never see an
aborted record and must stop at the last stable offset while a transaction is open; read_uncommitted
consumers see every data record; a second producer with the same transactional.id fences the first;
offsets sent with the transaction commit with it; kafka-transactions lists and describes them.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from lakefeed_testing.kafka_reference import run_kafka_tool
from tests.broker.conftest import Target

pytestmark = pytest.mark.integration  # `target` asks for `broker` or `kafka` at run time: not seen by the hooks


def _topic(target: Target, partitions: int = 2) -> str:
    name = f"tx-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(20)
    return name


def _producer(target: Target, transactional_id: str, **config: Any) -> Producer:
    producer = Producer({"bootstrap.servers": target.bootstrap, "transactional.id": transactional_id,
                         "linger.ms": 5, **config})
    producer.init_transactions(30)
    return producer


def _read(target: Target, topic: str, isolation: str, seconds: float = 4.0, group: str | None = None) -> list[bytes]:
    """Every value a consumer of `isolation` reads from the start within `seconds` of quiet."""
    consumer = Consumer({"bootstrap.servers": target.bootstrap, "group.id": group or f"g-{uuid.uuid4().hex[:8]}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "isolation.level": isolation})
    consumer.subscribe([topic])
    values: list[bytes] = []
    quiet_until = time.monotonic() + seconds
    deadline = time.monotonic() + 40
    while time.monotonic() < min(quiet_until, deadline):
        message = consumer.poll(0.3)
        if message is None:
            continue
        assert message.error() is None, message.error()
        values.append(message.value())
        quiet_until = time.monotonic() + seconds / 2
    consumer.close()
    return values


def _send(producer: Producer, topic: str, values: list[bytes], partitions: int = 2) -> None:
    for index, value in enumerate(values):
        producer.produce(topic, value=value, partition=index % partitions)
    producer.flush(20)


def test_commit_and_abort_are_seen_by_read_committed_and_read_uncommitted(target: Target) -> None:
    topic = _topic(target)
    producer = _producer(target, f"tx-{uuid.uuid4().hex[:8]}")
    batches = {"c1": [f"c1-{i}".encode() for i in range(6)], "a1": [f"a1-{i}".encode() for i in range(5)],
               "c2": [f"c2-{i}".encode() for i in range(4)]}
    for name, values in batches.items():
        producer.begin_transaction()
        _send(producer, topic, values)
        if name.startswith("c"):
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    committed = sorted(_read(target, topic, "read_committed"))
    assert committed == sorted(batches["c1"] + batches["c2"]), target.name
    everything = sorted(_read(target, topic, "read_uncommitted"))
    assert everything == sorted(batches["c1"] + batches["a1"] + batches["c2"]), target.name


def test_read_committed_stops_at_the_open_transaction_until_it_commits(target: Target) -> None:
    topic = _topic(target)
    plain = Producer({"bootstrap.servers": target.bootstrap})
    plain.produce(topic, value=b"before", partition=0)
    plain.flush(10)
    producer = _producer(target, f"tx-{uuid.uuid4().hex[:8]}")
    producer.begin_transaction()
    producer.produce(topic, value=b"open", partition=0)
    producer.flush(10)
    plain.produce(topic, value=b"after", partition=0)  # behind the open transaction: not readable yet
    plain.flush(10)
    assert _read(target, topic, "read_committed", seconds=3) == [b"before"], target.name
    assert sorted(_read(target, topic, "read_uncommitted", seconds=3)) == [b"after", b"before", b"open"]
    consumer = Consumer({"bootstrap.servers": target.bootstrap, "group.id": "lso", "isolation.level":
                         "read_committed"})
    low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)
    assert (low, high) == (0, 1), f"{target.name}: the last stable offset is the open transaction's first offset"
    producer.commit_transaction(30)
    assert _read(target, topic, "read_committed") == [b"before", b"open", b"after"], target.name
    low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)
    assert high == 4, f"{target.name}: after the commit marker the last stable offset is the log end"
    consumer.close()


def test_a_second_instance_fences_the_first_and_aborts_its_open_transaction(target: Target) -> None:
    topic = _topic(target)
    transactional_id = f"tx-{uuid.uuid4().hex[:8]}"
    first = _producer(target, transactional_id)
    first.begin_transaction()
    _send(first, topic, [b"zombie-1", b"zombie-2"])
    second = _producer(target, transactional_id)  # fences `first`, aborting what it left open
    second.begin_transaction()
    _send(second, topic, [b"live"])
    second.commit_transaction(30)
    with pytest.raises(KafkaException) as caught:
        first.commit_transaction(10)
    assert caught.value.args[0].fatal() or "fenced" in str(caught.value).lower(), str(caught.value)
    assert _read(target, topic, "read_committed") == [b"live"], target.name


def test_offsets_sent_with_the_transaction_commit_and_abort_with_it(target: Target) -> None:
    source, sink = _topic(target, 1), _topic(target, 1)
    plain = Producer({"bootstrap.servers": target.bootstrap})
    for index in range(10):
        plain.produce(source, value=f"in-{index}".encode())
    plain.flush(10)
    group = f"g-{uuid.uuid4().hex[:8]}"
    consumer = Consumer({"bootstrap.servers": target.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "isolation.level": "read_committed"})
    consumer.subscribe([source])
    producer = _producer(target, f"tx-{uuid.uuid4().hex[:8]}")
    read: list[Any] = []
    deadline = time.monotonic() + 30
    while len(read) < 10 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            read.append(message)
    assert len(read) == 10
    for end, commit in ((4, False), (6, True)):
        producer.begin_transaction()
        _send(producer, sink, [b"out-" + m.value() for m in read[:end]], partitions=1)
        producer.send_offsets_to_transaction([TopicPartition(source, 0, end)], consumer.consumer_group_metadata(), 30)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    committed = consumer.committed([TopicPartition(source, 0)], timeout=10)
    assert committed[0].offset == 6, f"{target.name}: the aborted transaction's offset 4 must not count"
    consumer.close()
    assert len(_read(target, sink, "read_committed")) == 6


def test_kafka_transactions_lists_and_describes(target: Target) -> None:
    topic = _topic(target)
    transactional_id = f"tx-{uuid.uuid4().hex[:8]}"
    producer = _producer(target, transactional_id)
    producer.begin_transaction()
    _send(producer, topic, [b"x"])

    def tool(*args: str) -> str:
        result = run_kafka_tool("kafka-transactions", "--bootstrap-server", target.bootstrap, *args, timeout=90)
        assert result.returncode == 0, f"{target.name}: {result.stdout}\n{result.stderr[-3000:]}"
        return result.stdout

    listed = [line.split() for line in tool("list").splitlines()]
    assert any(row[:1] == [transactional_id] and "Ongoing" in row for row in listed), listed
    described = tool("describe", "--transactional-id", transactional_id)
    assert "Ongoing" in described and f"{topic}-" in described, described
    producer.commit_transaction(30)
    described = tool("describe", "--transactional-id", transactional_id)
    assert "CompleteCommit" in described, described
