"""IncrementalAlterConfigs (44): SET, DELETE, APPEND and SUBTRACT single topic configs."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.config_catalog import TOPIC_CONFIGS, ConfigType, topic_entry
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
from broker.topics import Topic

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def _list_change(state: BrokerState, topic: Topic, config: Any) -> str:
    definition = TOPIC_CONFIGS.get(config.name)
    if definition is None or definition.kind is not ConfigType.LIST:
        raise KafkaApiError(ErrorCode.invalid_config, f"APPEND/SUBTRACT need a list config; {config.name!r} is not one")
    current = topic_entry(state.config, topic.configs, config.name).value or ""
    items = [i for i in current.split(",") if i]
    change = [i.strip() for i in (config.value or "").split(",") if i.strip()]
    if config.config_operation == APPEND:
        items += [i for i in change if i not in items]
    else:
        items = [i for i in items if i not in change]
    return ",".join(items)


def _alter(state: BrokerState, resource: Any, validate_only: bool) -> None:
    if resource.resource_type == BROKER:
        raise refuse_broker_change(state, resource.resource_name)
    if resource.resource_type != TOPIC:
        raise unsupported_resource(resource.resource_type)
    topic = state.require_topic(resource.resource_name)
    configs: dict[str, str | None] = dict(topic.configs)
    for config in resource.configs:
        if config.config_operation == SET:
            configs[config.name] = config.value
        elif config.config_operation == DELETE:
            configs[config.name] = None
        elif config.config_operation in (APPEND, SUBTRACT):
            configs[config.name] = _list_change(state, topic, config)
        else:
            raise KafkaApiError(ErrorCode.invalid_request,
                                f"config operation {config.config_operation} is not SET, DELETE, APPEND or SUBTRACT")
    values = validated(configs)
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
