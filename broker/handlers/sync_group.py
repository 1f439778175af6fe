"""SyncGroup (14): the leader hands in assignments; every member gets its own. v5+ names the protocol type and
protocol the member joined with; a mismatch answers INCONSISTENT_GROUP_PROTOCOL, as in Kafka (KIP-559)."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers._build import NO_THROTTLE, build
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    cls = response_class(request.header.api_key, request.header.api_version)
    assignments = {a.member_id: a.assignment for a in body.assignments}
    try:
        state.check_coordinator(body.group_id)
        result = await state.groups.sync(body.group_id, body.generation_id, body.member_id, assignments,
                                         getattr(body, "group_instance_id", None),  # v3+
                                         getattr(body, "protocol_type", None), getattr(body, "protocol_name", None))
    except KafkaApiError as exc:
        return build(cls, throttle_time=NO_THROTTLE, error_code=exc.code, protocol_type=None, protocol_name=None,
                     assignment=b"")
    return build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, protocol_type=result.protocol_type,
                 protocol_name=result.protocol_name, assignment=result.assignment)
