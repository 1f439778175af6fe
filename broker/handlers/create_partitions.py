"""CreatePartitions (37): grow a topic's partition count (never shrink).

A single node adds the logs itself; a cluster member forwards the request to the active controller, which
validates it, places the new replicas and commits them to the metadata log, and answers once it has applied
them (every broker then creates the logs of the replicas it holds and leads or follows them)."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError


async def _grow(state: BrokerState, wanted: Any, validate_only: bool) -> None:
    topic = state.require_topic(wanted.name)
    if topic.is_internal:
        raise KafkaApiError(ErrorCode.invalid_request,
                            f"topic {topic.name!r} is internal; its partition count decides where groups live")
    assignment = None if wanted.assignments is None else [list(a.broker_ids) for a in wanted.assignments]
    await state.role.create_partitions(topic, wanted.count, assignment, validate_only)


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    cls = response_class(request.header.api_key, request.header.api_version)
    results = []
    for wanted in body.topics:
        try:
            await _grow(state, wanted, body.validate_only)
            code, message = ErrorCode.none, None
        except KafkaApiError as exc:
            code, message = exc.code, str(exc)
        results.append(build(nested(cls, "CreatePartitionsTopicResult"), name=wanted.name, error_code=code,
                             error_message=message))
    return build(cls, throttle_time=NO_THROTTLE, results=tuple(results))
