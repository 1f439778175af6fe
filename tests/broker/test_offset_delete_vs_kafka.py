"""OffsetDelete (47) as raw requests, the same assertions against our broker and Apache Kafka 4.3.

Sarama's ClusterAdmin.DeleteConsumerGroupOffset, the Java AdminClient's deleteConsumerGroupOffsets and
`kafka-consumer-groups --delete-offsets` send it. Kafka (KIP-496; OffsetMetadataManager.deleteOffsets and
ClassicGroup.validateOffsetDelete in the group coordinator): a group that does not exist is GROUP_ID_NOT_FOUND and
a non-empty group of another protocol type than "consumer" NON_EMPTY_GROUP, both for the whole request; an unknown
topic or partition is UNKNOWN_TOPIC_OR_PARTITION; a topic some member of the group subscribes to (the "consumer"
protocol's subscription) is GROUP_SUBSCRIBED_TO_TOPIC for every partition asked; any other partition is deleted
(NONE, whether it had an offset or not)."""

from __future__ import annotations

import datetime
import struct
import time
import uuid
from typing import Any

from kio.schema.add_offsets_to_txn.v3.request import AddOffsetsToTxnRequest
from kio.schema.end_txn.v3.request import EndTxnRequest
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v3.request import FindCoordinatorRequest
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
from kio.schema.join_group.v5.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.schema.leave_group.v3.request import LeaveGroupRequest, MemberIdentity
from kio.schema.offset_commit.v8.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.schema.offset_delete.v0.request import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
)
from kio.schema.offset_fetch.v6.request import OffsetFetchRequest, OffsetFetchRequestTopic
from kio.schema.offset_fetch.v7.request import OffsetFetchRequest as OffsetFetchRequestV7
from kio.schema.offset_fetch.v7.request import OffsetFetchRequestTopic as OffsetFetchTopicV7
from kio.schema.sync_group.v5.request import SyncGroupRequest, SyncGroupRequestAssignment
from kio.schema.txn_offset_commit.v3.request import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)

from tests.broker.conftest import Target
from tests.broker.kio_wire import create_topic, roundtrip
from tests.broker.test_group_requests_vs_kafka import _coordinator_ready

OFFSET_COMMIT, OFFSET_FETCH, JOIN_GROUP, LEAVE_GROUP, SYNC_GROUP = 8, 9, 11, 13, 14
FIND_COORDINATOR, CREATE_TOPICS, INIT_PRODUCER_ID, ADD_OFFSETS_TO_TXN, END_TXN = 10, 19, 22, 25, 26
TXN_OFFSET_COMMIT, OFFSET_DELETE = 28, 47
SESSION = datetime.timedelta(seconds=30)


def _commit(port: int, group: str, topic: str, partitions: range) -> None:
    request = OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
        topics=(OffsetCommitRequestTopic(name=topic, partitions=tuple(
            OffsetCommitRequestPartition(partition_index=p, committed_offset=10 + p, committed_leader_epoch=-1,
                                         committed_metadata="") for p in partitions)),))
    _, answer = roundtrip(port, OFFSET_COMMIT, 8, request)
    assert {p.error_code for t in answer.topics for p in t.partitions} == {ErrorCode.none}


def _committed(port: int, group: str, topic: str, partitions: range) -> list[int]:
    request = OffsetFetchRequest(group_id=group, topics=(
        OffsetFetchRequestTopic(name=topic, partition_indexes=tuple(partitions)),))
    _, answer = roundtrip(port, OFFSET_FETCH, 6, request)
    return [p.committed_offset for p in answer.topics[0].partitions]


def _delete(port: int, group: str, asked: dict[str, tuple[int, ...]]) -> tuple[ErrorCode, dict[tuple[str, int], Any]]:
    """The top-level error and each (topic, partition)'s error code."""
    request = OffsetDeleteRequest(group_id=group, topics=tuple(
        OffsetDeleteRequestTopic(name=t, partitions=tuple(OffsetDeleteRequestPartition(partition_index=p) for p in ps))
        for t, ps in asked.items()))
    _, answer = roundtrip(port, OFFSET_DELETE, 0, request)
    return answer.error_code, {(t.name, p.partition_index): p.error_code for t in answer.topics for p in t.partitions}


def _subscription(*topics: str) -> bytes:
    """ConsumerProtocolSubscription v0: version, topics, no user data."""
    encoded = b"".join(struct.pack(">h", len(t)) + t.encode() for t in topics)
    return struct.pack(">hi", 0, len(topics)) + encoded + struct.pack(">i", -1)


def _stable_member(port: int, group: str, protocol_type: str, metadata: bytes) -> str:
    """One member joined and synced: the group is Stable."""
    def join(member_id: str) -> Any:
        request = JoinGroupRequest(group_id=group, session_timeout=SESSION, rebalance_timeout=SESSION,
                                   member_id=member_id, group_instance_id=None, protocol_type=protocol_type,
                                   protocols=(JoinGroupRequestProtocol(name="range", metadata=metadata),))
        return roundtrip(port, JOIN_GROUP, 5, request)[1]

    member_id: str = join("").member_id
    joined = join(member_id)
    assert joined.error_code == ErrorCode.none
    _, synced = roundtrip(port, SYNC_GROUP, 5, SyncGroupRequest(
        group_id=group, generation_id=joined.generation_id, member_id=member_id, group_instance_id=None,
        protocol_type=protocol_type, protocol_name="range",
        assignments=(SyncGroupRequestAssignment(member_id=member_id, assignment=b""),)))
    assert synced.error_code == ErrorCode.none
    return member_id


def _leave(port: int, group: str, member_id: str) -> None:
    roundtrip(port, LEAVE_GROUP, 3, LeaveGroupRequest(
        group_id=group, members=(MemberIdentity(member_id=member_id, group_instance_id=None),)))


def test_offsets_of_a_group_without_members_are_deleted_per_partition(target: Target) -> None:
    port, group = target.port, f"g-{uuid.uuid4().hex[:10]}"
    _coordinator_ready(port, group)
    topic = create_topic(port, 3)
    assert _delete(port, group, {topic: (0,)}) == (ErrorCode.group_id_not_found, {}), target.name
    assert _delete(port, "", {topic: (0,)}) == (ErrorCode.invalid_group_id, {}), target.name

    _commit(port, group, topic, range(2))
    unknown = f"t-{uuid.uuid4().hex[:10]}"
    error, codes = _delete(port, group, {topic: (0, 2, 7), unknown: (0,)})
    assert error == ErrorCode.none, target.name
    assert codes == {(topic, 0): ErrorCode.none, (topic, 2): ErrorCode.none,
                     (topic, 7): ErrorCode.unknown_topic_or_partition,
                     (unknown, 0): ErrorCode.unknown_topic_or_partition}, target.name
    assert _committed(port, group, topic, range(3)) == [-1, 11, -1], target.name


def test_a_topic_a_consumer_member_subscribes_to_keeps_its_offsets(target: Target) -> None:
    port, group = target.port, f"g-{uuid.uuid4().hex[:10]}"
    _coordinator_ready(port, group)
    subscribed, other = create_topic(port, 2), create_topic(port, 1)
    _commit(port, group, subscribed, range(2))
    _commit(port, group, other, range(1))
    member_id = _stable_member(port, group, "consumer", _subscription(subscribed))
    try:
        error, codes = _delete(port, group, {subscribed: (0, 1), other: (0,)})
        assert error == ErrorCode.none, target.name
        assert codes == {(subscribed, 0): ErrorCode.group_subscribed_to_topic,
                         (subscribed, 1): ErrorCode.group_subscribed_to_topic,
                         (other, 0): ErrorCode.none}, target.name
        assert _committed(port, group, subscribed, range(2)) == [10, 11], target.name
        assert _committed(port, group, other, range(1)) == [-1], target.name
    finally:
        _leave(port, group, member_id)
    # once the member left the group is Empty: nothing is subscribed to
    assert _delete(port, group, {subscribed: (1,)}) == (ErrorCode.none, {(subscribed, 1): ErrorCode.none})
    assert _committed(port, group, subscribed, range(2)) == [10, -1], target.name


def test_a_non_empty_group_of_another_protocol_type_is_non_empty_group(target: Target) -> None:
    port, group = target.port, f"g-{uuid.uuid4().hex[:10]}"
    _coordinator_ready(port, group)
    topic = create_topic(port, 1)
    _commit(port, group, topic, range(1))
    member_id = _stable_member(port, group, "connect", b"\x00\x01")
    try:
        assert _delete(port, group, {topic: (0,)}) == (ErrorCode.non_empty_group, {}), target.name
        assert _committed(port, group, topic, range(1)) == [10], target.name
    finally:
        _leave(port, group, member_id)


def _transactional_producer(port: int, transactional_id: str) -> tuple[int, int]:
    """InitProducerId for a transactional id once its coordinator answers: (producer id, epoch)."""
    deadline = time.monotonic() + 30
    while True:
        _, found = roundtrip(port, FIND_COORDINATOR, 3, FindCoordinatorRequest(key=transactional_id, key_type=1))
        if found.error_code == ErrorCode.none:
            _, initialized = roundtrip(port, INIT_PRODUCER_ID, 4, InitProducerIdRequest(
                transactional_id=transactional_id, transaction_timeout=datetime.timedelta(seconds=60),
                producer_id=-1, producer_epoch=-1))
            if initialized.error_code == ErrorCode.none:
                return int(initialized.producer_id), int(initialized.producer_epoch)
        assert time.monotonic() < deadline, f"no transaction coordinator for {transactional_id}"
        time.sleep(0.2)


def _fetch_stable(port: int, group: str, topic: str) -> tuple[ErrorCode, int]:
    _, answer = roundtrip(port, OFFSET_FETCH, 7, OffsetFetchRequestV7(group_id=group, require_stable=True, topics=(
        OffsetFetchTopicV7(name=topic, partition_indexes=(0,)),)))
    partition = answer.topics[0].partitions[0]
    return partition.error_code, partition.committed_offset


def test_deleting_an_offset_drops_the_one_an_open_transaction_holds(target: Target) -> None:
    """Kafka writes a tombstone for a partition whose offset an open transaction holds, and replaying a tombstone
    drops the pending transactional offsets of that partition too (OffsetMetadataManager.replay): the
    transaction's commit no longer brings it back. While pending, OffsetFetch with require_stable answers
    UNSTABLE_OFFSET_COMMIT with no offset (-1, OffsetMetadataManager.fetchOffsets), not the committed one."""
    port, group, transactional_id = target.port, f"g-{uuid.uuid4().hex[:10]}", f"tx-{uuid.uuid4().hex[:10]}"
    _coordinator_ready(port, group)
    topic = create_topic(port, 1)
    _commit(port, group, topic, range(1))
    producer_id, epoch = _transactional_producer(port, transactional_id)
    _, added = roundtrip(port, ADD_OFFSETS_TO_TXN, 3, AddOffsetsToTxnRequest(
        transactional_id=transactional_id, producer_id=producer_id, producer_epoch=epoch, group_id=group))
    assert added.error_code == ErrorCode.none, target.name
    _, staged = roundtrip(port, TXN_OFFSET_COMMIT, 3, TxnOffsetCommitRequest(
        transactional_id=transactional_id, group_id=group, producer_id=producer_id, producer_epoch=epoch,
        generation_id=-1, member_id="", group_instance_id=None, topics=(TxnOffsetCommitRequestTopic(
            name=topic, partitions=(TxnOffsetCommitRequestPartition(
                partition_index=0, committed_offset=20, committed_leader_epoch=-1, committed_metadata=""),)),)))
    assert staged.topics[0].partitions[0].error_code == ErrorCode.none, target.name
    assert _fetch_stable(port, group, topic) == (ErrorCode.unstable_offset_commit, -1), target.name

    assert _delete(port, group, {topic: (0,)}) == (ErrorCode.none, {(topic, 0): ErrorCode.none}), target.name
    assert _fetch_stable(port, group, topic) == (ErrorCode.none, -1), target.name
    _, ended = roundtrip(port, END_TXN, 3, EndTxnRequest(transactional_id=transactional_id, producer_id=producer_id,
                                                         producer_epoch=epoch, committed=True))
    assert ended.error_code == ErrorCode.none, target.name
    assert _fetch_stable(port, group, topic) == (ErrorCode.none, -1), target.name
