"""Transactions on a 3-node cluster, the same tests against Apache Kafka with LAKEFEED_CLUSTER_TESTS=kafka:
markers reach partitions led by every broker (WriteTxnMarkers between brokers), and a transaction survives
the death of its coordinator or of a partition leader: nothing aborted is ever visible to read_committed,
nothing committed is lost, and the last stable offset does not hang."""

from __future__ import annotations

import time
import uuid
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

from tests.broker.cluster.clients import create_topic, new_topic_name
from tests.broker.cluster.harness import Cluster, until
from tests.broker.cluster.txn_clients import transaction_coordinator


def _producer(bootstrap: str, transactional_id: str) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id, "acks": "all",
                         "linger.ms": 5})
    producer.init_transactions(60)
    return producer


def _read_committed(bootstrap: str, topic: str, want: int, timeout: float = 40) -> list[bytes]:
    """Values a read_committed consumer reads from the start: `want` of them, then 2 s more to catch extras."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"rc-{uuid.uuid4().hex[:8]}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + timeout
    extra_until: float | None = None
    while time.monotonic() < deadline and (extra_until is None or time.monotonic() < extra_until):
        message: Any = consumer.poll(0.3)
        if message is not None and message.error() is None:
            values.append(message.value())
        if len(values) >= want and extra_until is None:
            extra_until = time.monotonic() + 2
    consumer.close()
    return values


def _send(producer: Producer, topic: str, values: list[bytes], partitions: int = 3) -> None:
    for index, value in enumerate(values):
        producer.produce(topic, value=value, partition=index % partitions)
    assert producer.flush(30) == 0


def test_markers_reach_partitions_led_by_every_broker(cluster: Cluster) -> None:
    topic = new_topic_name()
    create_topic(cluster.bootstrap, topic, partitions=3, assignment=[[1, 2, 3], [2, 3, 1], [3, 1, 2]])
    producer = _producer(cluster.bootstrap, f"tx-{topic}")
    committed: list[bytes] = []
    for round_ in range(4):
        values = [f"{round_}-{i}".encode() for i in range(9)]
        producer.begin_transaction()
        _send(producer, topic, values)
        if round_ % 2 == 0:
            producer.commit_transaction(60)
            committed += values
        else:
            producer.abort_transaction(60)
    assert sorted(_read_committed(cluster.bootstrap, topic, len(committed))) == sorted(committed)


def test_a_transaction_survives_its_coordinators_death(cluster: Cluster) -> None:
    topic = new_topic_name()
    create_topic(cluster.bootstrap, topic, partitions=3)
    transactional_id = f"tx-{topic}"
    producer = _producer(cluster.bootstrap, transactional_id)
    producer.begin_transaction()
    _send(producer, topic, [b"a", b"b", b"c"])
    coordinator = transaction_coordinator(cluster, transactional_id)
    cluster.kill(coordinator)
    producer.commit_transaction(90)  # the client finds the new coordinator, which knows the transaction
    live = [n for n in cluster.node_ids if n != coordinator]
    assert sorted(_read_committed(cluster.bootstrap_of(live), topic, 3)) == [b"a", b"b", b"c"]
    producer.begin_transaction()
    _send(producer, topic, [b"x"])
    producer.abort_transaction(60)
    assert sorted(_read_committed(cluster.bootstrap_of(live), topic, 3)) == [b"a", b"b", b"c"]


def test_a_transaction_survives_a_partition_leaders_death(cluster: Cluster) -> None:
    topic = new_topic_name()
    transactional_id = f"tx-{topic}"
    producer = _producer(cluster.bootstrap, transactional_id)
    coordinator = transaction_coordinator(cluster, transactional_id)
    leader = next(n for n in cluster.node_ids if n != coordinator)  # kill a leader, not the coordinator
    create_topic(cluster.bootstrap, topic, assignment=[[leader, *[n for n in cluster.node_ids if n != leader]]])
    producer.begin_transaction()
    _send(producer, topic, [b"one", b"two"], partitions=1)
    cluster.kill(leader)
    producer.commit_transaction(90)  # the marker goes to the new leader, which has the open transaction
    live = [n for n in cluster.node_ids if n != leader]
    assert sorted(_read_committed(cluster.bootstrap_of(live), topic, 2)) == [b"one", b"two"]
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_of(live), "group.id": "lso",
                         "isolation.level": "read_committed"})
    stable = until(lambda: consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)[1] == 3,
                   30, "the last stable offset past the commit marker")
    consumer.close()
    assert stable  # two records and the commit marker: the last stable offset did not hang
