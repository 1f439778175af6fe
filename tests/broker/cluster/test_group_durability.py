"""Issue 14: group state survives the coordinator. Apache Kafka stores each completed rebalance (generation,
protocol, members and their assignments) in `__consumer_offsets` and the broker that takes the partition over
loads it; members then keep heartbeating and committing under their generation. Without it members get
ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID, which kafkajs treats as fatal, and every client rebalances."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaException, Producer
from kafka import KafkaConsumer
from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.errors import KafkaError as PyKafkaError

from tests.broker.cluster.clients import create_topic, new_topic_name
from tests.broker.cluster.harness import Cluster, until
from tests.broker.cluster.test_coordinator import _coordinator

FATAL_FOR_MEMBERS = ("ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID", "IllegalGeneration", "UnknownMemberId",
                     "CommitFailed")


class _Rebalances(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self) -> None:
        self.assigned: list[set[int]] = []

    def on_partitions_revoked(self, revoked: object) -> None:
        pass

    def on_partitions_assigned(self, assigned: list[object]) -> None:
        self.assigned.append({tp.partition for tp in assigned})  # type: ignore[attr-defined]


def test_members_keep_their_generation_when_the_coordinator_is_killed(cluster: Cluster) -> None:
    topic = new_topic_name()
    create_topic(cluster.bootstrap, topic, partitions=2)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(200):
        producer.produce(topic, str(i).encode(), partition=i % 2)
    assert producer.flush(30) == 0
    group = f"g-{topic}"
    confluent_assigned: list[set[int]] = []
    member_a = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "session.timeout.ms": 10_000,
                         "heartbeat.interval.ms": 500})
    member_a.subscribe([topic], on_assign=lambda c, ps: confluent_assigned.append({p.partition for p in ps}))
    listener = _Rebalances()
    member_b = KafkaConsumer(bootstrap_servers=cluster.bootstrap.split(","), group_id=group,
                             enable_auto_commit=False, auto_offset_reset="earliest", session_timeout_ms=10_000,
                             heartbeat_interval_ms=500, consumer_timeout_ms=100)
    member_b.subscribe([topic], listener=listener)
    errors: list[str] = []

    def poll_and_commit() -> None:
        if member_a.poll(0.1) is not None and member_a.assignment():
            try:
                member_a.commit(asynchronous=False)
            except KafkaException as exc:
                errors.append(f"confluent: {exc}")
        if member_b.poll(timeout_ms=100) and member_b.assignment():
            try:
                member_b.commit()
            except PyKafkaError as exc:
                errors.append(f"kafka-python: {exc!r}")

    try:
        def settled() -> bool:
            poll_and_commit()
            return (len(confluent_assigned) >= 1 and len(listener.assigned) >= 1
                    and len(confluent_assigned[-1]) == 1 and len(listener.assigned[-1]) == 1)

        until(settled, 60, "both members with one partition each", interval=0)
        rebalances = (len(confluent_assigned), len(listener.assigned))
        print(f"{cluster.name}: settled after {rebalances} assignments")
        _, coordinator = _coordinator(cluster.ports[cluster.node_ids[0]], group)
        errors.clear()
        cluster.kill(coordinator)
        live = [n for n in cluster.node_ids if n != coordinator]
        until(lambda: (a := _coordinator(cluster.ports[live[0]], group))[0] == 0 and a[1] != coordinator, 30,
              "a new coordinator")
        deadline = time.monotonic() + 15  # past the session timeout: stale members would have been expired
        while time.monotonic() < deadline:
            poll_and_commit()
        fatal = [e for e in errors if any(code in e for code in FATAL_FOR_MEMBERS)]
        assert not fatal, f"members lost their generation when the coordinator moved: {fatal[:3]}"
        assert (len(confluent_assigned), len(listener.assigned)) == rebalances, (
            f"the coordinator move made the members rebalance: {confluent_assigned} / {listener.assigned}")
    finally:
        member_a.close()
        member_b.close()
