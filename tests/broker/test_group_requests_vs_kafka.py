"""Group requests as raw bytes, the same assertions against our broker and Apache Kafka 4.3.

OffsetCommit with a generation from a member unknown to a group that only stores offsets: UNKNOWN_MEMBER_ID
(Kafka keeps such a group, Empty); to a group that does not exist at all: ILLEGAL_GENERATION (v8 and older).

KIP-394 (JoinGroup v4+): a dynamic member's first JoinGroup is answered MEMBER_ID_REQUIRED with the id to join
with. KIP-559 (SyncGroup v5+): a protocol type or protocol other than the group's is INCONSISTENT_GROUP_PROTOCOL.

kafka-python 3.0.12 showed why it matters: a JoinGroup that outlived the client's poll was sent again, and
without KIP-394 each try left a member behind for the next rebalance to wait on."""

from __future__ import annotations

import datetime
import time
import uuid
from typing import Any

from kio.schema.create_topics.v5.request import CreatableTopic, CreateTopicsRequest
from kio.schema.describe_groups.v5.request import DescribeGroupsRequest
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v3.request import FindCoordinatorRequest
from kio.schema.join_group.v3.request import JoinGroupRequest as JoinGroupV3
from kio.schema.join_group.v3.request import JoinGroupRequestProtocol as ProtocolV3
from kio.schema.join_group.v5.request import JoinGroupRequest as JoinGroupV5
from kio.schema.join_group.v5.request import JoinGroupRequestProtocol as ProtocolV5
from kio.schema.leave_group.v3.request import LeaveGroupRequest, MemberIdentity
from kio.schema.list_groups.v4.request import ListGroupsRequest
from kio.schema.offset_commit.v8.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.schema.offset_fetch.v6.request import OffsetFetchRequest
from kio.schema.sync_group.v5.request import SyncGroupRequest, SyncGroupRequestAssignment

from tests.broker.conftest import Target
from tests.broker.kio_wire import roundtrip

OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR, JOIN_GROUP, LEAVE_GROUP, SYNC_GROUP = 8, 9, 10, 11, 13, 14
DESCRIBE_GROUPS = 15
LIST_GROUPS, CREATE_TOPICS = 16, 19
SESSION = datetime.timedelta(seconds=30)  # a given member id stays pending this long: ample on a busy machine
REBALANCE = datetime.timedelta(seconds=30)


def _coordinator_ready(port: int, group: str) -> None:
    """Kafka answers COORDINATOR_NOT_AVAILABLE until `__consumer_offsets` exists (FindCoordinator creates it),
    then NOT_COORDINATOR to group requests until the coordinator has loaded the group's partition: wait for an
    OffsetFetch of the group to be answered."""
    deadline = time.monotonic() + 30
    while True:
        _, answer = roundtrip(port, FIND_COORDINATOR, 3, FindCoordinatorRequest(key=group, key_type=0))
        if answer.error_code == ErrorCode.none:
            _, answer = roundtrip(port, OFFSET_FETCH, 6, OffsetFetchRequest(group_id=group, topics=()))
            if answer.error_code == ErrorCode.none:
                return
        assert time.monotonic() < deadline, f"no coordinator for {group}: {answer.error_code!r}"
        time.sleep(0.2)


def _join_v5(port: int, group: str, member_id: str) -> Any:
    request = JoinGroupV5(group_id=group, session_timeout=SESSION, rebalance_timeout=REBALANCE, member_id=member_id,
                          group_instance_id=None, protocol_type="consumer",
                          protocols=(ProtocolV5(name="range", metadata=b"\x00\x00"),))
    return roundtrip(port, JOIN_GROUP, 5, request)[1]


def test_a_new_member_gets_its_id_with_member_id_required_then_joins_with_it(target: Target) -> None:
    port, group = target.port, f"g-{uuid.uuid4().hex[:10]}"
    _coordinator_ready(port, group)

    first = _join_v5(port, group, "")
    assert first.error_code == ErrorCode.member_id_required, target.name
    assert first.member_id and first.generation_id == -1 and first.leader == "" and first.members == ()

    stranger = _join_v5(port, group, f"nobody-{uuid.uuid4()}")
    assert stranger.error_code == ErrorCode.unknown_member_id, target.name

    joined = _join_v5(port, group, first.member_id)
    assert joined.error_code == ErrorCode.none, target.name
    assert (joined.member_id, joined.leader, joined.generation_id) == (first.member_id, first.member_id, 1)
    assert [m.member_id for m in joined.members] == [first.member_id]
    _, described = roundtrip(port, DESCRIBE_GROUPS, 5, DescribeGroupsRequest(groups=(group,),
                                                                             include_authorized_operations=False))
    member = described.groups[0].members[0]  # the host as Kafka prints it (kafka-consumer-groups' HOST column)
    assert (member.member_id, member.client_id, member.client_host) == (first.member_id, "tests", "/127.0.0.1")

    _, left = roundtrip(port, LEAVE_GROUP, 3, LeaveGroupRequest(
        group_id=group, members=(MemberIdentity(member_id=first.member_id, group_instance_id=None),)))
    assert left.error_code == ErrorCode.none and left.members[0].error_code == ErrorCode.none


def test_join_group_before_v4_joins_without_a_member_id(target: Target) -> None:
    port, group = target.port, f"g-{uuid.uuid4().hex[:10]}"
    _coordinator_ready(port, group)
    request = JoinGroupV3(group_id=group, session_timeout=SESSION, rebalance_timeout=REBALANCE, member_id="",
                          protocol_type="consumer", protocols=(ProtocolV3(name="range", metadata=b"\x00\x00"),))
    _, joined = roundtrip(port, JOIN_GROUP, 3, request)
    assert joined.error_code == ErrorCode.none, target.name
    assert joined.member_id and joined.leader == joined.member_id and joined.generation_id == 1


def test_sync_group_with_another_protocol_type_or_protocol_is_inconsistent(target: Target) -> None:
    port, group = target.port, f"g-{uuid.uuid4().hex[:10]}"
    _coordinator_ready(port, group)
    member = _join_v5(port, group, "").member_id
    joined = _join_v5(port, group, member)
    assert (joined.error_code, joined.generation_id) == (ErrorCode.none, 1), target.name

    def sync(protocol_type: str | None, protocol_name: str | None, generation: int = 1) -> Any:
        request = SyncGroupRequest(group_id=group, generation_id=generation, member_id=member, group_instance_id=None,
                                   protocol_type=protocol_type, protocol_name=protocol_name,
                                   assignments=(SyncGroupRequestAssignment(member_id=member, assignment=b"a"),))
        return roundtrip(port, SYNC_GROUP, 5, request)[1]

    assert sync("connect", "range").error_code == ErrorCode.inconsistent_group_protocol, target.name
    assert sync("consumer", "roundrobin").error_code == ErrorCode.inconsistent_group_protocol, target.name
    assert sync("connect", "range", generation=7).error_code == ErrorCode.illegal_generation, target.name
    answer = sync("consumer", "range")
    assert (answer.error_code, answer.protocol_type, answer.protocol_name, answer.assignment) == (
        ErrorCode.none, "consumer", "range", b"a"), target.name


def test_a_member_commit_to_a_group_that_only_stores_offsets_is_from_an_unknown_member(target: Target) -> None:
    port, group, topic = target.port, f"g-{uuid.uuid4().hex[:10]}", f"t-{uuid.uuid4().hex[:10]}"
    _coordinator_ready(port, group)
    _, created = roundtrip(port, CREATE_TOPICS, 5, CreateTopicsRequest(
        topics=(CreatableTopic(name=topic, num_partitions=1, replication_factor=1, assignments=(), configs=()),),
        timeout=datetime.timedelta(seconds=10), validate_only=False))
    assert created.topics[0].error_code == ErrorCode.none, target.name

    def commit(generation: int, member_id: str) -> ErrorCode:
        request = OffsetCommitRequest(
            group_id=group, generation_id_or_member_epoch=generation, member_id=member_id, group_instance_id=None,
            topics=(OffsetCommitRequestTopic(name=topic, partitions=(OffsetCommitRequestPartition(
                partition_index=0, committed_offset=5, committed_leader_epoch=-1, committed_metadata=""),)),))
        _, answer = roundtrip(port, OFFSET_COMMIT, 8, request)
        code: ErrorCode = answer.topics[0].partitions[0].error_code
        return code

    assert commit(1, "someone") == ErrorCode.illegal_generation, target.name  # no group at all
    assert commit(-1, "") == ErrorCode.none, target.name  # a standalone commit: the group now stores offsets
    assert commit(1, "someone") == ErrorCode.unknown_member_id, target.name
    _, described = roundtrip(port, DESCRIBE_GROUPS, 5, DescribeGroupsRequest(groups=(group,),
                                                                             include_authorized_operations=False))
    assert (described.groups[0].group_state, described.groups[0].protocol_type) == ("Empty", ""), target.name
    _, listed = roundtrip(port, LIST_GROUPS, 4, ListGroupsRequest(states_filter=()))
    assert [(g.group_state, g.protocol_type) for g in listed.groups if g.group_id == group] == [("Empty", "")]
