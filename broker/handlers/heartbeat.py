"""Heartbeat (12): keeps a member's session alive; tells it when a rebalance started."""

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
    try:
        state.check_coordinator(body.group_id)
        state.groups.heartbeat(body.group_id, body.generation_id, body.member_id,
                               getattr(body, "group_instance_id", None))  # v3+
        code = ErrorCode.none
    except KafkaApiError as exc:
        code = exc.code
    return build(cls, throttle_time=NO_THROTTLE, error_code=code)
