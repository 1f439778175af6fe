"""LeaveGroup (13): one member (v0-2) or a batch of members (v3+) leave; the group rebalances.

A v3+ member identity with an empty member id and a `group_instance_id` removes that static member: what
Admin.removeMembersFromConsumerGroup sends (KIP-345)."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError


def _leave(state: BrokerState, group_id: str, member_id: str, group_instance_id: str | None = None) -> ErrorCode:
    try:
        state.check_coordinator(group_id)
        state.groups.leave(group_id, member_id, group_instance_id)
        return ErrorCode.none
    except KafkaApiError as exc:
        return exc.code


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    cls = response_class(request.header.api_key, request.header.api_version)
    if not hasattr(body, "members"):
        return build(cls, throttle_time=NO_THROTTLE, error_code=_leave(state, body.group_id, body.member_id))
    member_cls = nested(cls, "MemberResponse")
    answers = tuple(
        build(member_cls, member_id=m.member_id, group_instance_id=m.group_instance_id,
              error_code=_leave(state, body.group_id, m.member_id, m.group_instance_id))
        for m in body.members
    )
    return build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, members=answers)
