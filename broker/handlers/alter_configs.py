"""AlterConfigs (33): replace a topic's whole set of overrides (configs left out go back to default)."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers._configs import (
    BROKER,
    TOPIC,
    apply_topic_configs,
    refuse_broker_change,
    unsupported_resource,
    validated,
)
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError


def _alter(state: BrokerState, resource: Any, validate_only: bool) -> None:
    if resource.resource_type == BROKER:
        raise refuse_broker_change(state, resource.resource_name)
    if resource.resource_type != TOPIC:
        raise unsupported_resource(resource.resource_type)
    topic = state.require_topic(resource.resource_name)
    values = validated({c.name: c.value for c in resource.configs})
    apply_topic_configs(state, topic, {k: v for k, v in values.items() if v is not None}, validate_only)


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    cls = response_class(request.header.api_key, request.header.api_version)
    answers = []
    for resource in body.resources:
        try:
            _alter(state, resource, body.validate_only)
            code, message = ErrorCode.none, None
        except KafkaApiError as exc:
            code, message = exc.code, str(exc)
        answers.append(build(nested(cls, "AlterConfigsResourceResponse"), error_code=code, error_message=message,
                             resource_type=resource.resource_type, resource_name=resource.resource_name))
    return build(cls, throttle_time=NO_THROTTLE, responses=tuple(answers))
