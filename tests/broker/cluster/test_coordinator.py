"""The group coordinator is the leader of the group's __consumer_offsets partition: every broker names the
same one, the others answer NOT_COORDINATOR, and committed offsets survive the coordinator's death."""

from __future__ import annotations

from confluent_kafka import Consumer, Producer, TopicPartition
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v3.request import FindCoordinatorRequest
from kio.schema.heartbeat.v4.request import HeartbeatRequest

from tests.broker.cluster.clients import create_topic, new_topic_name
from tests.broker.cluster.harness import Cluster, until
from tests.broker.kio_wire import roundtrip


def _coordinator(port: int, group: str) -> tuple[int, int]:
    _, answer = roundtrip(port, 10, 3, FindCoordinatorRequest(key=group, key_type=0))
    return int(answer.error_code), int(answer.node_id)


def test_every_broker_names_one_coordinator_and_the_others_refuse(cluster: Cluster) -> None:
    group = f"g-{new_topic_name()}"
    answers = {n: until(lambda n=n: (a := _coordinator(cluster.ports[n], group))[0] == 0 and a, 30,
                        f"FindCoordinator on node {n}") for n in cluster.node_ids}
    coordinators = {node for _, node in answers.values()}
    assert len(coordinators) == 1, answers
    coordinator = coordinators.pop()
    heartbeat = HeartbeatRequest(group_id=group, generation_id=1, member_id="m", group_instance_id=None)
    for n in cluster.node_ids:
        _, answer = roundtrip(cluster.ports[n], 12, 4, heartbeat)
        expected = ErrorCode.unknown_member_id if n == coordinator else ErrorCode.not_coordinator
        assert answer.error_code == expected, (n, coordinator, answer.error_code)


def test_committed_offsets_survive_the_coordinators_death(cluster: Cluster) -> None:
    topic = new_topic_name()
    create_topic(cluster.bootstrap, topic, partitions=1)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(10):
        producer.produce(topic, str(i).encode(), partition=0)
    assert producer.flush(30) == 0
    group = f"g-{topic}"
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    consumer.commit(offsets=[TopicPartition(topic, 0, 7)], asynchronous=False)
    consumer.close()
    _, coordinator = _coordinator(cluster.ports[cluster.node_ids[0]], group)
    cluster.kill(coordinator)
    live = [n for n in cluster.node_ids if n != coordinator]
    moved = until(lambda: (a := _coordinator(cluster.ports[live[0]], group))[0] == 0 and a[1] != coordinator and a,
                  30, "a new coordinator")
    assert moved[1] in live
    reader = Consumer({"bootstrap.servers": cluster.bootstrap_of(live), "group.id": group,
                       "enable.auto.commit": False})
    try:
        committed = until(lambda: reader.committed([TopicPartition(topic, 0)], timeout=5)[0].offset, 30,
                          "the committed offset from the new coordinator")
    finally:
        reader.close()
    assert committed == 7
