"""Requests as KafkaJS 2.2.4 sends them, as raw bytes, the same assertions against our broker and Apache Kafka 4.3.

These answer fields differed between the two when tests/broker/test_kafkajs.py's scenarios ran against both:

- OffsetCommit with null metadata (KafkaJS commits every offset so, also through TxnOffsetCommit): Kafka stores
  the empty string (its offset commit record's metadata is not nullable, a null becomes OffsetAndMetadata's "no
  metadata", ""), so OffsetFetch answers "" where we answered null. KafkaJS itself turns "" into null in
  admin.fetchOffsets; a client that hands the field on as it comes sees null instead of "".
- FindCoordinator's error message when there is no error: v1-v3 "NONE" (Kafka puts the error's message, and
  Errors.NONE's is its name), v4+ per coordinator "".
- DescribeConfigs' per-resource error message when there is no error: "" in every version.
- ListPartitionReassignments (KafkaJS's admin.listPartitionReassignments) was not served at all: KafkaJS failed
  with KafkaJSServerDoesNotSupportApiKey. With no reassignment under way Kafka answers no topics, no error.
"""

from __future__ import annotations

import datetime
import uuid

from kio.schema.describe_configs.v2.request import DescribeConfigsRequest as DescribeConfigsV2
from kio.schema.describe_configs.v2.request import DescribeConfigsResource as ResourceV2
from kio.schema.describe_configs.v4.request import DescribeConfigsRequest as DescribeConfigsV4
from kio.schema.describe_configs.v4.request import DescribeConfigsResource as ResourceV4
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v2.request import FindCoordinatorRequest as FindCoordinatorV2
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest as FindCoordinatorV4
from kio.schema.list_partition_reassignments.v0.request import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsTopics,
)
from kio.schema.offset_commit.v5.request import OffsetCommitRequest as OffsetCommitV5
from kio.schema.offset_commit.v5.request import OffsetCommitRequestPartition as CommitPartitionV5
from kio.schema.offset_commit.v5.request import OffsetCommitRequestTopic as CommitTopicV5
from kio.schema.offset_commit.v8.request import OffsetCommitRequest as OffsetCommitV8
from kio.schema.offset_commit.v8.request import OffsetCommitRequestPartition as CommitPartitionV8
from kio.schema.offset_commit.v8.request import OffsetCommitRequestTopic as CommitTopicV8
from kio.schema.offset_fetch.v4.request import OffsetFetchRequest as OffsetFetchV4
from kio.schema.offset_fetch.v4.request import OffsetFetchRequestTopic as FetchTopicV4
from kio.schema.offset_fetch.v8.request import OffsetFetchRequest as OffsetFetchV8
from kio.schema.offset_fetch.v8.request import OffsetFetchRequestGroup as FetchGroupV8
from kio.schema.offset_fetch.v8.request import OffsetFetchRequestTopics as FetchTopicV8

from tests.broker.conftest import Target
from tests.broker.kio_wire import create_topic, roundtrip
from tests.broker.test_group_requests_vs_kafka import _coordinator_ready

METADATA, OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR, CREATE_TOPICS, DESCRIBE_CONFIGS = 3, 8, 9, 10, 19, 32
LIST_PARTITION_REASSIGNMENTS = 46
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4


def test_a_commit_with_null_metadata_is_fetched_with_empty_metadata(target: Target) -> None:
    port, group = target.port, f"g-{uuid.uuid4().hex[:10]}"
    _coordinator_ready(port, group)
    topic = create_topic(port, 3)
    # v5 as KafkaJS sends it (partition 0, null metadata), v8 flexible (partition 1 null, partition 2 given)
    _, v5 = roundtrip(port, OFFSET_COMMIT, 5, OffsetCommitV5(
        group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=(CommitTopicV5(name=topic, partitions=(
            CommitPartitionV5(partition_index=0, committed_offset=4, committed_metadata=None),)),)))
    _, v8 = roundtrip(port, OFFSET_COMMIT, 8, OffsetCommitV8(
        group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
        topics=(CommitTopicV8(name=topic, partitions=(
            CommitPartitionV8(partition_index=1, committed_offset=6, committed_leader_epoch=-1,
                              committed_metadata=None),
            CommitPartitionV8(partition_index=2, committed_offset=9, committed_leader_epoch=-1,
                              committed_metadata="kept"))),)))
    assert [p.error_code for t in (*v5.topics, *v8.topics) for p in t.partitions] == [ErrorCode.none] * 3

    _, old = roundtrip(port, OFFSET_FETCH, 4, OffsetFetchV4(group_id=group, topics=(
        FetchTopicV4(name=topic, partition_indexes=(0, 1, 2)),)))
    assert [(p.committed_offset, p.metadata) for p in old.topics[0].partitions] == [
        (4, ""), (6, ""), (9, "kept")], target.name
    _, new = roundtrip(port, OFFSET_FETCH, 8, OffsetFetchV8(require_stable=False, groups=(
        FetchGroupV8(group_id=group, topics=(FetchTopicV8(name=topic, partition_indexes=(0, 1, 2)),)),)))
    assert [(p.committed_offset, p.metadata) for p in new.groups[0].topics[0].partitions] == [
        (4, ""), (6, ""), (9, "kept")], target.name


def test_find_coordinator_without_error_has_the_message_kafka_gives(target: Target) -> None:
    group = f"g-{uuid.uuid4().hex[:10]}"
    _coordinator_ready(target.port, group)
    _, old = roundtrip(target.port, FIND_COORDINATOR, 2, FindCoordinatorV2(key=group, key_type=0))
    assert (old.error_code, old.error_message) == (ErrorCode.none, "NONE"), target.name
    _, new = roundtrip(target.port, FIND_COORDINATOR, 4, FindCoordinatorV4(key_type=0, coordinator_keys=(group,)))
    assert [(c.error_code, c.error_message) for c in new.coordinators] == [(ErrorCode.none, "")], target.name


def test_describe_configs_without_error_has_an_empty_message(target: Target) -> None:
    topic = create_topic(target.port, 1)
    _, v2 = roundtrip(target.port, DESCRIBE_CONFIGS, 2, DescribeConfigsV2(include_synonyms=False, resources=(
        ResourceV2(resource_type=TOPIC_RESOURCE, resource_name=topic, configuration_keys=("cleanup.policy",)),
        ResourceV2(resource_type=BROKER_RESOURCE, resource_name="1", configuration_keys=("log.retention.ms",)))))
    _, v4 = roundtrip(target.port, DESCRIBE_CONFIGS, 4, DescribeConfigsV4(
        include_synonyms=False, include_documentation=False, resources=(
            ResourceV4(resource_type=TOPIC_RESOURCE, resource_name=topic, configuration_keys=("cleanup.policy",)),)))
    assert [(r.error_code, r.error_message) for r in (*v2.results, *v4.results)] == [(ErrorCode.none, "")] * 3


def test_list_partition_reassignments_answers_none_under_way(target: Target) -> None:
    topic = create_topic(target.port, 2)
    for topics in (None, (ListPartitionReassignmentsTopics(name=topic, partition_indexes=(0, 1)),
                          ListPartitionReassignmentsTopics(name=f"missing-{uuid.uuid4().hex[:8]}",
                                                           partition_indexes=(0,)))):
        _, answer = roundtrip(target.port, LIST_PARTITION_REASSIGNMENTS, 0, ListPartitionReassignmentsRequest(
            timeout=datetime.timedelta(seconds=10), topics=topics))
        assert (answer.error_code, answer.error_message, answer.topics) == (ErrorCode.none, None, ()), target.name
