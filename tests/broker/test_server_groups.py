"""Consumer groups through confluent-kafka: members join and leave while consuming; admin views."""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

import pytest
from confluent_kafka import Consumer, ConsumerGroupState, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.broker.conftest import BrokerProcess

PARTITIONS = 6
MESSAGES = 900


def _fill(broker: BrokerProcess, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)])[topic].result(10)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i in range(MESSAGES):
        producer.produce(topic, value=str(i).encode(), partition=i % PARTITIONS)
    assert producer.flush(20) == 0


def _consumer(broker: BrokerProcess, group: str, assignor: str) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 300,
            "partition.assignment.strategy": assignor,
        }
    )


def _poll_once(consumer: Consumer, committed: list[tuple[int, int]]) -> None:
    message = consumer.poll(0.05)
    if message is None or message.error() is not None:
        return
    try:
        consumer.commit(message=message, asynchronous=False)
    except KafkaException:
        # Not committed: if the partition is still ours, read the message again; if it moved, its
        # next owner starts from the committed offset.
        with contextlib.suppress(KafkaException):
            consumer.seek(TopicPartition(message.topic(), message.partition(), message.offset()))
        return
    committed.append((message.partition(), message.offset()))


class _Member:
    """One group member polling in its own thread, as an application runs each consumer. One thread polling
    every member deadlocked under load: a member's synchronous commit waits behind its own JoinGroup on the
    coordinator connection (the broker answers a connection's requests in order, as Kafka does), and that
    JoinGroup waits for another member to rejoin, which needs its poll() to hand over revoked partitions."""

    def __init__(self, broker: BrokerProcess, group: str, assignor: str, topic: str,
                 committed: list[tuple[int, int]]) -> None:
        self.consumer = _consumer(broker, group, assignor)
        self.consumer.subscribe([topic])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(committed,), daemon=True)
        self._thread.start()

    def _run(self, committed: list[tuple[int, int]]) -> None:
        while not self._stop.is_set():
            _poll_once(self.consumer, committed)
        self.consumer.close()

    def leave(self) -> None:
        self._stop.set()
        self._thread.join(60)
        assert not self._thread.is_alive(), "a member did not leave the group within 60 s"


@pytest.mark.parametrize("assignor", ["range", "cooperative-sticky"])
def test_three_members_join_and_leave_without_loss_or_duplicates(
    broker: BrokerProcess, topic_name: str, assignor: str
) -> None:
    _fill(broker, topic_name)
    group = f"g-{topic_name}"
    committed: list[tuple[int, int]] = []
    members = [_Member(broker, group, assignor, topic_name, committed)]
    # Timeline by progress: join a 2nd and a 3rd member, then two leave; the last one finishes.
    steps = {100: "join", 250: "join", 450: "leave", 600: "leave"}
    deadline = time.monotonic() + 60
    try:
        while len(committed) < MESSAGES and time.monotonic() < deadline:
            time.sleep(0.01)
            for threshold, action in list(steps.items()):
                if len(committed) >= threshold:
                    del steps[threshold]
                    if action == "join":
                        members.append(_Member(broker, group, assignor, topic_name, committed))
                    else:
                        members.pop(0).leave()
    finally:
        for member in members:
            member.leave()
    assert not steps, f"consumption stalled before steps {steps}"
    assert len(committed) == len(set(committed)), "a committed message was consumed twice"
    per_partition = {p: sorted(o for q, o in committed if q == p) for p in range(PARTITIONS)}
    assert per_partition == {p: list(range(MESSAGES // PARTITIONS)) for p in range(PARTITIONS)}


def test_admin_lists_and_describes_groups(broker: BrokerProcess, topic_name: str) -> None:
    _fill(broker, topic_name)
    group = f"g-{topic_name}"
    consumer = _consumer(broker, group, "range")
    consumer.subscribe([topic_name])
    committed: list[Any] = []
    deadline = time.monotonic() + 20
    while len(committed) < 5 and time.monotonic() < deadline:
        _poll_once(consumer, committed)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    listed = admin.list_consumer_groups().result(10)
    assert group in {g.group_id for g in listed.valid}
    described = admin.describe_consumer_groups([group])[group].result(10)
    assert described.state == ConsumerGroupState.STABLE
    assert len(described.members) == 1
    assigned = {tp.partition for tp in described.members[0].assignment.topic_partitions}
    assert assigned == set(range(PARTITIONS))
    offsets = admin.list_consumer_group_offsets([_group_request(group)])[group].result(10)
    assert sum(tp.offset for tp in offsets.topic_partitions) == len(committed)
    consumer.close()
    deleted = admin.delete_consumer_groups([group])[group]
    deleted.result(10)
    assert group not in {g.group_id for g in admin.list_consumer_groups().result(10).valid}


def _group_request(group: str) -> Any:
    from confluent_kafka import ConsumerGroupTopicPartitions

    return ConsumerGroupTopicPartitions(group)
