"""Topic admin on a cluster: a config change made on one broker reaches every broker (it goes through the
controller), and adding partitions is refused with an error that says what to do instead."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions

from tests.broker.cluster.clients import create_topic, new_topic_name
from tests.broker.cluster.harness import Cluster, until


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


def test_adding_partitions_is_refused_with_the_workaround(cluster: Cluster) -> None:
    topic = new_topic_name()
    create_topic(cluster.bootstrap, topic, partitions=1)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    with pytest.raises(KafkaException) as refused:
        admin.create_partitions([NewPartitions(topic, 3)])[topic].result(30)
    error = refused.value.args[0]
    assert error.code() == KafkaError.INVALID_REQUEST
    assert "create a new topic" in error.str()
