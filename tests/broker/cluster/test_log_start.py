"""The log start offset is the leader's on every replica, as in Kafka: records removed with DeleteRecords stay
removed after the leader dies, and a follower whose log ends before the leader's log start (it was stopped while
the leader deleted past it) restarts its log there and rejoins the ISR instead of failing every fetch."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as Tp
from confluent_kafka.admin import AdminClient

from tests.broker.cluster.clients import create_topic, describe, new_topic_name
from tests.broker.cluster.harness import Cluster, until


def _produce(bootstrap: str, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    for i in range(count):
        producer.produce(topic, str(i).encode(), partition=0)
    assert producer.flush(30) == 0


def _delete_before(bootstrap: str, topic: str, offset: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    result = admin.delete_records([Tp(topic, 0, offset)])
    low = next(iter(result.values())).result(30)
    assert low.low_watermark == offset


def _watermarks(bootstrap: str, topic: str) -> tuple[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "watermarks"})
    try:
        low, high = consumer.get_watermark_offsets(Tp(topic, 0), timeout=10)
        return int(low), int(high)
    finally:
        consumer.close()


def _new_leader_after_killing(cluster: Cluster, topic: str) -> str:
    leader = describe(cluster.bootstrap, topic)[0].leader
    cluster.kill(leader)
    live = cluster.bootstrap_of([n for n in cluster.node_ids if n != leader])
    until(lambda: describe(live, topic)[0].leader not in (leader, -1), 30, f"a new leader after node {leader} died")
    return live


def test_deleted_records_stay_deleted_after_the_leader_dies(cluster: Cluster) -> None:
    topic = new_topic_name()
    create_topic(cluster.bootstrap, topic, partitions=1)
    _produce(cluster.bootstrap, topic, 20)
    # Answered once every live follower has dropped the records too (Kafka's DelayedDeleteRecords): the leader
    # may die at once after it.
    _delete_before(cluster.bootstrap, topic, 10)
    live = _new_leader_after_killing(cluster, topic)
    assert until(lambda: _watermarks(live, topic) == (10, 20), 30, "the new leader's log starts at 10")


def test_a_follower_behind_the_leaders_log_start_restarts_there_and_rejoins(cluster: Cluster) -> None:
    topic = new_topic_name()
    state = create_topic(cluster.bootstrap, topic, partitions=1)[0]
    controller = cluster.active_controller()
    follower = next(n for n in state.replicas if n not in (state.leader, controller))
    _produce(cluster.bootstrap, topic, 10)
    live = cluster.bootstrap_of([n for n in cluster.node_ids if n != follower])
    cluster.pause(follower)
    try:
        until(lambda: follower not in describe(live, topic)[0].isr, 30, f"node {follower} out of the ISR")
        _produce(live, topic, 30)
        _delete_before(live, topic, 35)  # past the paused follower's log end (10)
    finally:
        cluster.resume(follower)
    started = time.monotonic()
    until(lambda: follower in describe(cluster.bootstrap, topic)[0].isr, 30, f"node {follower} back in the ISR")
    print(f"{cluster.name}: follower {follower} restarted its log at the leader's log start and rejoined the ISR "
          f"{time.monotonic() - started:.2f} s after SIGCONT")
    # Either survivor may lead now; both start at 35 and hold everything after it.
    survivors = _new_leader_after_killing(cluster, topic)
    seen: list[object] = []

    def starts_at_35() -> bool:
        seen.append((describe(survivors, topic)[0], _watermarks(survivors, topic)))
        return seen[-1][1] == (35, 40)  # type: ignore[index]

    try:
        until(starts_at_35, 30, "the log starts at 35 on the new leader")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; last (partition, watermarks) seen: {seen[-2:]}") from None
