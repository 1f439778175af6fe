"""DeleteTopics (20): by name (v0-5) or by name or topic id (v6)."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError


async def handle(state: BrokerState, request: Request) -> Any:
    cls = response_class(request.header.api_key, request.header.api_version)
    result_cls = nested(cls, "DeletableTopicResult")
    body = request.body
    wanted: list[tuple[str | None, Any]] = (
        [(t.name, t.topic_id) for t in body.topics]
        if hasattr(body, "topics")
        else [(n, None) for n in body.topic_names]
    )
    results = []
    for name, topic_id in wanted:
        try:
            if name is None and topic_id is not None:
                found = state.topics.by_id(topic_id)
                if found is None:
                    raise KafkaApiError(ErrorCode.unknown_topic_id, f"no topic has id {topic_id}")
                name = found.name
            if name is None:
                raise KafkaApiError(ErrorCode.invalid_request, "delete needs a topic name or id")
            topic = state.require_topic(name)
            topic_id = topic.topic_id
            if topic.is_internal:
                raise KafkaApiError(ErrorCode.invalid_request, f"topic {name!r} is internal and cannot be deleted")
            await state.role.delete_topic(name)
            code, message = ErrorCode.none, None
        except KafkaApiError as exc:
            code, message = exc.code, str(exc)
        results.append(build(result_cls, name=name, topic_id=topic_id, error_code=code, error_message=message))
    return build(cls, throttle_time=NO_THROTTLE, responses=tuple(results))
