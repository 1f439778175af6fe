"""JoinGroup (11): join (or rejoin) a classic consumer group; waits for the rebalance to complete.

v4+ answers a dynamic member's first JoinGroup MEMBER_ID_REQUIRED with the member id to join with (KIP-394); v5+
carries `group_instance_id` (KIP-345 static membership): see broker/coordinator/groups.py."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.coordinator.group_model import MemberIdRequired
from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    version = request.header.api_version
    cls = response_class(request.header.api_key, version)
    session_ms = int(body.session_timeout.total_seconds() * 1000)
    rebalance = getattr(body, "rebalance_timeout", None)
    rebalance_ms = int(rebalance.total_seconds() * 1000) if rebalance is not None else session_ms
    empty = "" if version < 7 else None
    try:
        state.check_coordinator(body.group_id)
        result = await state.groups.join(
            body.group_id,
            body.member_id,
            getattr(body, "group_instance_id", None),
            request.header.client_id or "",
            f"/{request.client_host}",  # as Kafka shows it (Java's InetAddress.toString): DescribeGroups, HOST
            session_ms,
            rebalance_ms,
            body.protocol_type,
            [(p.name, p.metadata) for p in body.protocols],
            skip_assignment_supported=version >= 9,
            require_known_member_id=version >= 4,
        )
    except KafkaApiError as exc:
        member_id = exc.member_id if isinstance(exc, MemberIdRequired) else body.member_id
        return build(cls, throttle_time=NO_THROTTLE, error_code=exc.code, generation_id=-1, protocol_type=empty,
                     protocol_name=empty, leader="", skip_assignment=False, member_id=member_id, members=())
    member_cls = nested(cls, "JoinGroupResponseMember")
    members = tuple(
        build(member_cls, member_id=m.member_id, group_instance_id=m.group_instance_id, metadata=m.metadata)
        for m in result.members
    )
    return build(
        cls,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        generation_id=result.generation,
        protocol_type=result.protocol_type,
        protocol_name=result.protocol_name if result.protocol_name is not None else empty,
        leader=result.leader,
        skip_assignment=result.skip_assignment,
        member_id=result.member_id,
        members=members,
    )
