"""Admin requests as raw bytes, the same assertions against our broker and Apache Kafka 4.3.

ListPartitionReassignments (46), which Sarama's ClusterAdmin.ListPartitionReassignments and
`kafka-reassign-partitions --verify` send: a cluster moving no replicas answers no error and no topics, for all
topics (null) as for named ones, known or not (Kafka's ReplicationControlManager.listReassignments lists only
partitions with a reassignment in progress and skips unknown topics and partitions)."""

from __future__ import annotations

import datetime
import uuid

from kio.schema.create_topics.v5.request import CreatableTopic, CreateTopicsRequest
from kio.schema.errors import ErrorCode
from kio.schema.list_partition_reassignments.v0.request import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsTopics,
)

from tests.broker.conftest import Target
from tests.broker.kio_wire import roundtrip

CREATE_TOPICS, LIST_PARTITION_REASSIGNMENTS = 19, 46


def test_no_partition_is_being_reassigned(target: Target) -> None:
    port, topic = target.port, f"t-{uuid.uuid4().hex[:10]}"
    _, created = roundtrip(port, CREATE_TOPICS, 5, CreateTopicsRequest(
        topics=(CreatableTopic(name=topic, num_partitions=2, replication_factor=1, assignments=(), configs=()),),
        timeout=datetime.timedelta(seconds=10), validate_only=False))
    assert created.topics[0].error_code == ErrorCode.none, target.name
    for topics in (None, (ListPartitionReassignmentsTopics(name=topic, partition_indexes=(0, 1, 9)),
                          ListPartitionReassignmentsTopics(name=f"t-{uuid.uuid4().hex[:10]}", partition_indexes=(0,)))):
        _, answer = roundtrip(port, LIST_PARTITION_REASSIGNMENTS, 0, ListPartitionReassignmentsRequest(
            timeout=datetime.timedelta(seconds=10), topics=topics))
        assert (answer.error_code, answer.error_message, answer.topics) == (ErrorCode.none, None, ()), target.name
