"""DescribeGroups (15): state, protocol and members of each group."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.coordinator.group_model import GroupState
from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class

_NO_OPERATIONS = -2147483648


async def handle(state: BrokerState, request: Request) -> Any:
    cls = response_class(request.header.api_key, request.header.api_version)
    member_cls = nested(cls, "DescribedGroupMember")
    groups = []
    for group_id in request.body.groups:
        group = state.groups.lookup(group_id)
        if group is None:
            known = state.offsets.has_offsets(group_id)  # Empty, no protocol type: as Kafka describes it
            groups.append(build(nested(cls, "DescribedGroup"), error_code=ErrorCode.none, group_id=group_id,
                                group_state=GroupState.EMPTY.value if known else GroupState.DEAD.value,
                                protocol_type="", protocol_data="", members=(),
                                authorized_operations=_NO_OPERATIONS))
            continue
        stable = group.state is GroupState.STABLE
        members = tuple(
            build(member_cls, member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
                  client_host=m.client_host,
                  member_metadata=dict(m.protocols).get(group.protocol_name or "", b"") if stable else b"",
                  member_assignment=m.assignment if stable else b"")
            for m in group.members.values()
        )
        groups.append(build(nested(cls, "DescribedGroup"), error_code=ErrorCode.none, group_id=group_id,
                            group_state=group.state.value, protocol_type=group.protocol_type or "",
                            protocol_data=(group.protocol_name or "") if stable else "", members=members,
                            authorized_operations=_NO_OPERATIONS))
    return build(cls, throttle_time=NO_THROTTLE, groups=tuple(groups))
