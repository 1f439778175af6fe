"""FindCoordinator (10): the broker coordinating a group (key type 0) or transaction (1).

A single node coordinates everything. In a cluster the coordinator of a group is the leader of its
`__consumer_offsets` partition, of a transactional id the leader of its `__transaction_state` partition (as in
Kafka), so it moves with that partition's leadership.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers import _placement
from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError

# The error message of an answer without error, as Kafka 4.3 gives it: v1-v3 the error's message, which for
# Errors.NONE is its name; v4+ (one answer per key) the empty string.
_NO_ERROR_MESSAGE_BEFORE_V4 = "NONE"
_NO_ERROR_MESSAGE = ""


def _find(state: BrokerState, key: str, key_type: int,
          no_error_message: str) -> tuple[_placement.BrokerView | None, ErrorCode, str]:
    try:
        return state.role.coordinator(key, key_type), ErrorCode.none, no_error_message
    except KafkaApiError as exc:
        return None, exc.code, str(exc)


async def handle(state: BrokerState, request: Request) -> Any:
    cls = response_class(request.header.api_key, request.header.api_version)
    body = request.body
    if hasattr(body, "coordinator_keys"):
        found = [(key, *_find(state, key, body.key_type, _NO_ERROR_MESSAGE)) for key in body.coordinator_keys]
        coordinators = tuple(
            build(nested(cls, "Coordinator"), key=key, node_id=b.node_id if b else -1, host=b.host if b else "",
                  port=b.port if b else -1, error_code=code, error_message=message)
            for key, b, code, message in found
        )
        return build(cls, throttle_time=NO_THROTTLE, coordinators=coordinators)
    b, code, message = _find(state, body.key, getattr(body, "key_type", 0), _NO_ERROR_MESSAGE_BEFORE_V4)
    return build(cls, throttle_time=NO_THROTTLE, error_code=code, error_message=message,
                 node_id=b.node_id if b else -1, host=b.host if b else "", port=b.port if b else -1)
