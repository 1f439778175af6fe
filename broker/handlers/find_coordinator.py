"""FindCoordinator (10): this broker coordinates every group (key type 0) and transaction (1)."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class


async def handle(state: BrokerState, request: Request) -> Any:
    cls = response_class(request.header.api_key, request.header.api_version)
    body = request.body
    listener = state.config.advertised
    node = state.config.node_id
    if hasattr(body, "coordinator_keys"):
        coordinators = tuple(
            build(nested(cls, "Coordinator"), key=key, node_id=node, host=listener.host, port=listener.port,
                  error_code=ErrorCode.none, error_message=None)
            for key in body.coordinator_keys
        )
        return build(cls, throttle_time=NO_THROTTLE, coordinators=coordinators)
    return build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, error_message=None, node_id=node,
                 host=listener.host, port=listener.port)
