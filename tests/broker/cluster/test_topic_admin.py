"""Topic admin on a cluster: a config change made on one broker reaches every broker (it goes through the
controller), and CreatePartitions grows a replicated topic on every broker: the new partitions have leaders spread
over the brokers and full ISRs, take acks=all writes and read back; explicit assignments are checked, shrinking is
refused, and Kafka's own `kafka-topics --alter --partitions` works."""

from __future__ import annotations

import re
import time

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer, TopicCollection
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic

from lakefeed_testing.kafka_reference import run_kafka_tool
from tests.broker.cluster.clients import PRODUCER, PartitionState, consume_all, create_topic, describe, new_topic_name
from tests.broker.cluster.harness import LAG_MS, Cluster, until


def test_alter_configs_on_one_broker_reaches_every_broker(cluster: Cluster) -> None:
    topic = new_topic_name()
    create_topic(cluster.bootstrap, topic, partitions=1)
    first, *others = cluster.node_ids
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, set_config={"retention.ms": "123456"})
    writer = AdminClient({"bootstrap.servers": cluster.bootstrap_of([first])})  # kept alive until the answer
    writer.alter_configs([resource])[resource].result(30)
    for node in others:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_of([node])})
        wanted = ConfigResource(ConfigResource.Type.TOPIC, topic)

        def seen(admin: AdminClient = admin, wanted: ConfigResource = wanted) -> bool:
            return admin.describe_configs([wanted])[wanted].result(10)["retention.ms"].value == "123456"

        until(seen, 30, f"retention.ms on node {node}")


def _everywhere(cluster: Cluster, topic: str, count: int) -> dict[int, PartitionState]:
    """Wait until every broker reports `count` partitions of `topic`, each with a leader and a full ISR."""
    seen: dict[int, PartitionState] = {}
    for node in cluster.node_ids:

        def grown(node: int = node) -> bool:
            state = describe(cluster.bootstrap_of([node]), topic)
            seen.update(state)
            return len(state) == count and all(s.leader >= 0 and s.isr == cluster.node_ids for s in state.values())

        until(grown, 30, f"{topic}: {count} partitions with full ISRs on node {node}")
    return seen


def _refused(admin: AdminClient, wanted: NewPartitions) -> KafkaError:
    with pytest.raises(KafkaException) as refused:
        admin.create_partitions([wanted])[wanted.topic].result(30)
    error: KafkaError = refused.value.args[0]
    return error


def test_create_partitions_grows_a_replicated_topic_on_every_broker(cluster: Cluster) -> None:
    topic = new_topic_name()
    create_topic(cluster.bootstrap, topic, partitions=2)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_partitions([NewPartitions(topic, 5)])[topic].result(30)
    state = _everywhere(cluster, topic, 5)
    assert {s.leader for s in state.values()} == set(cluster.node_ids)  # leaders spread over the brokers
    producer = Producer({"bootstrap.servers": cluster.bootstrap, **PRODUCER})
    sent = {p: list(range(p * 100, p * 100 + 20)) for p in (2, 3, 4)}
    for p, seqs in sent.items():
        for seq in seqs:
            producer.produce(topic, value=str(seq).encode(), partition=p)
    assert producer.flush(30) == 0
    got = consume_all(cluster.bootstrap, topic)
    for p, seqs in sent.items():  # read below the high watermark: every ISR member has them
        assert got[p] == list(enumerate(seqs))
    time.sleep(LAG_MS / 1000 + 0.5)  # followers that did not fetch the new partitions would leave the ISR by now
    _everywhere(cluster, topic, 5)


def test_create_partitions_checks_assignments_and_refuses_to_shrink(cluster: Cluster) -> None:
    topic = new_topic_name()
    create_topic(cluster.bootstrap, topic, partitions=1)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    assert _refused(admin, NewPartitions(topic, 2, replica_assignment=[[1, 2]])).code() == (
        KafkaError.INVALID_REPLICA_ASSIGNMENT)  # replication factor 2 on an RF 3 topic
    assert _refused(admin, NewPartitions(topic, 2, replica_assignment=[[1, 2, 99]])).code() == (
        KafkaError.INVALID_REPLICA_ASSIGNMENT)  # no broker 99
    admin.create_partitions([NewPartitions(topic, 2)], validate_only=True)[topic].result(30)
    admin.create_partitions([NewPartitions(topic, 2, replica_assignment=[[3, 1, 2]])])[topic].result(30)
    state = _everywhere(cluster, topic, 2)  # validate_only added nothing: the explicit one made partition 1
    assert (state[1].leader, state[1].replicas) == (3, [3, 1, 2])
    shrink = _refused(admin, NewPartitions(topic, 1))
    assert shrink.code() == KafkaError.INVALID_PARTITIONS and "2 partition" in shrink.str()


def test_kafka_topics_alter_partitions(cluster: Cluster) -> None:
    topic = new_topic_name()
    create_topic(cluster.bootstrap, topic, partitions=1)
    altered = run_kafka_tool("kafka-topics", "--bootstrap-server", cluster.bootstrap, "--alter", "--topic", topic,
                             "--partitions", "4", timeout=90)
    assert altered.returncode == 0, altered.stderr[-3000:]
    _everywhere(cluster, topic, 4)
    described = run_kafka_tool("kafka-topics", "--bootstrap-server", cluster.bootstrap, "--describe", "--topic", topic,
                               timeout=90)
    assert re.search(rf"Topic: {topic}\s+TopicId: \S+\s+PartitionCount: 4\s+ReplicationFactor: 3", described.stdout)


def test_one_topic_created_through_every_broker_at_once_is_created_once(cluster: Cluster) -> None:
    """Two brokers auto-creating one topic at the same moment is common (a changefeed's first rows); exactly one
    CreateTopics wins, the others get TOPIC_ALREADY_EXISTS, and every broker ends with the same topic id."""
    for _ in range(3):
        topic = new_topic_name()
        admins = [AdminClient({"bootstrap.servers": f"127.0.0.1:{cluster.ports[n]}"}) for n in cluster.node_ids]
        for admin in admins:  # connected first, so the three requests leave together
            admin.list_topics(timeout=10)
        futures = [admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=3)])[topic]
                   for admin in admins]
        outcomes = []
        for future in futures:
            try:
                future.result(30)
                outcomes.append("created")
            except KafkaException as exc:
                outcomes.append(exc.args[0].name())
        assert sorted(outcomes) == ["TOPIC_ALREADY_EXISTS", "TOPIC_ALREADY_EXISTS", "created"], outcomes
        ids = {n: until(lambda n=n, topic=topic: _topic_id(cluster.ports[n], topic), 30, f"{topic} on node {n}")
               for n in cluster.node_ids}
        assert len(set(ids.values())) == 1, ids


def _topic_id(port: int, topic: str) -> str:
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
    description = admin.describe_topics(TopicCollection([topic]))[topic].result(10)
    return str(description.topic_id)
